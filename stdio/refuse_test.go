package stdio_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// listen.Options.OnRefuse sees every stdio listen answered with an error
// instead of a stream, with the error sent and the request once it could
// be read, and nothing else: not a refused request of another method, not
// a listen that opened. A panic in it is contained.
func TestOnRefuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type refusal struct {
			req *listen.Request
			err error
		}
		errs := make(chan refusal, 16)
		src := listentest.NewSource()
		src.BeforeOpen = func(_ context.Context, req *listen.Request) error {
			if req.ID.Raw() == `"fails"` {
				return errors.New("database down")
			}
			return nil
		}
		h := start(t, t.Context(), src, &options{Listen: listen.Options{MaxStreams: 1, OnRefuse: func(req *listen.Request, err error) {
			errs <- refusal{req, err}
			panic("a hook bug is contained")
		}}})
		next := func(code int, message string, id string) error {
			t.Helper()
			r := <-errs
			if id == "" {
				require.Nil(t, r.req, "refused before the request was read")
			} else {
				require.NotNil(t, r.req)
				require.Equal(t, id, r.req.ID.Raw())
			}
			err := r.err
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, code, we.Code)
			require.Equal(t, message, we.Message)
			return err
		}

		h.openListen(`1`) // takes the only slot
		h.send(listenLine(`1`, `{}`))
		requireError(t, h.recv(), `1`, jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID)
		next(jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID, "")

		h.send(listenLine(`2`, `[]`))
		requireError(t, h.recv(), `2`, jsonrpc.CodeInvalidParams, spec.MsgNotificationsObject)
		next(jsonrpc.CodeInvalidParams, spec.MsgNotificationsObject, "")

		h.send(listenLineVersion(`3`, `{}`, "2025-06-18"))
		requireError(t, h.recv(), `3`, jsonrpc.CodeMethodNotFound, spec.MsgMethodNotFoundListen)
		next(jsonrpc.CodeMethodNotFound, spec.MsgMethodNotFoundListen, `3`)

		h.send(listenLineVersion(`4`, `{}`, "2099-01-01"))
		requireError(t, h.recv(), `4`, jsonrpc.CodeUnsupportedProtocolVersion, spec.MsgUnsupportedVersion)
		next(jsonrpc.CodeUnsupportedProtocolVersion, spec.MsgUnsupportedVersion, `4`)

		h.send(listenLine(`5`, `{}`))
		requireError(t, h.recv(), `5`, jsonrpc.CodeInternalError, spec.MsgCapacityExhausted)
		require.ErrorIs(t, next(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted, `5`), listen.ErrOverloaded)

		h.send(cancelLine(`1`, "bye")) // frees the slot
		h.closedReason()
		synctest.Wait() // the slot is free once the listen's goroutine is done
		h.send(listenLine(`"fails"`, `{}`))
		requireError(t, h.recv(), `"fails"`, jsonrpc.CodeInternalError, spec.MsgSourceFailedToOpen)
		next(jsonrpc.CodeInternalError, spec.MsgSourceFailedToOpen, `"fails"`)

		// Not listens: not reported.
		h.send(requestLine(`6`, "tools/list"))
		requireError(t, h.recv(), `6`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Empty(t, errs)
	})
}
