package stdio_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/stdio"
)

// listen.Options.OnRefuse sees every stdio listen answered with an error
// instead of a stream, with the error sent and the request (its id and
// transport at least), and nothing else: not a refused request of another method, not
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
			// Read or not, the request holds its id and its transport, so
			// that a refusal is counted under its transport kind.
			require.NotNil(t, r.req)
			require.Equal(t, id, r.req.ID.Raw())
			require.Equal(t, stdio.TransportKind, r.req.Transport.Kind)
			err := r.err
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, code, we.Code)
			require.Equal(t, message, we.Message)
			return err
		}

		h.openListen(`1`) // takes the only slot
		h.send(listenLine(`1`, `{}`))
		requireError(t, h.recv(), `1`, jsonrpc.CodeInvalidRequest, core.DuplicateID)
		next(jsonrpc.CodeInvalidRequest, core.DuplicateID, `1`)

		h.send(listenLine(`2`, `[]`))
		requireError(t, h.recv(), `2`, jsonrpc.CodeInvalidParams, core.NotificationsObject)
		next(jsonrpc.CodeInvalidParams, core.NotificationsObject, `2`)

		h.send(listenLineVersion(`3`, `{}`, "2025-06-18"))
		requireError(t, h.recv(), `3`, jsonrpc.CodeMethodNotFound, core.MethodNotFoundListen)
		next(jsonrpc.CodeMethodNotFound, core.MethodNotFoundListen, `3`)

		h.send(listenLineVersion(`4`, `{}`, "2099-01-01"))
		requireError(t, h.recv(), `4`, jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion)
		next(jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion, `4`)

		h.send(listenLine(`5`, `{}`))
		requireError(t, h.recv(), `5`, jsonrpc.CodeInternalError, core.CapacityExhausted)
		require.ErrorIs(t, next(jsonrpc.CodeInternalError, core.CapacityExhausted, `5`), listen.ErrOverloaded)

		h.send(cancelLine(`1`, "bye")) // frees the slot
		h.closedReason()
		synctest.Wait() // the slot is free once the listen's goroutine is done
		h.send(listenLine(`"fails"`, `{}`))
		requireError(t, h.recv(), `"fails"`, jsonrpc.CodeInternalError, core.SourceFailedToOpen)
		next(jsonrpc.CodeInternalError, core.SourceFailedToOpen, `"fails"`)

		// Not listens: not reported.
		h.send(requestLine(`6`, "tools/list"))
		requireError(t, h.recv(), `6`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Empty(t, errs)
	})
}
