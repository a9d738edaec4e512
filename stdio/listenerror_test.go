package stdio_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/wiremsg"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/stdio"
)

// OnListenError sees every listen answered with an error instead of a
// stream, with the error sent, and nothing else: not a refused request of
// another method, not a listen that opened. A panic in it is contained.
func TestOnListenError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errs := make(chan error, 16)
		src := listentest.NewSource()
		src.BeforeOpen = func(_ context.Context, req *listen.Request) error {
			if req.ID.Raw() == `"fails"` {
				return errors.New("database down")
			}
			return nil
		}
		h := start(t, t.Context(), src, &stdio.Options{
			MaxSubscriptions: 1,
			OnListenError: func(err error) {
				errs <- err
				panic("a hook bug is contained")
			},
		})
		next := func(code int, message string) error {
			t.Helper()
			err := <-errs
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, code, we.Code)
			require.Equal(t, message, we.Message)
			return err
		}

		h.openListen(`1`) // takes the only slot
		h.send(listenLine(`1`, `{}`))
		requireError(t, h.recv(), `1`, jsonrpc.CodeInvalidRequest, wiremsg.DuplicateID)
		next(jsonrpc.CodeInvalidRequest, wiremsg.DuplicateID)

		h.send(listenLine(`2`, `[]`))
		requireError(t, h.recv(), `2`, jsonrpc.CodeInvalidParams, wiremsg.NotificationsObject)
		next(jsonrpc.CodeInvalidParams, wiremsg.NotificationsObject)

		h.send(listenLineVersion(`3`, `{}`, "2025-06-18"))
		requireError(t, h.recv(), `3`, jsonrpc.CodeMethodNotFound, wiremsg.MethodNotFoundListen)
		next(jsonrpc.CodeMethodNotFound, wiremsg.MethodNotFoundListen)

		h.send(listenLineVersion(`4`, `{}`, "2099-01-01"))
		requireError(t, h.recv(), `4`, jsonrpc.CodeUnsupportedProtocolVersion, wiremsg.UnsupportedVersion)
		next(jsonrpc.CodeUnsupportedProtocolVersion, wiremsg.UnsupportedVersion)

		h.send(listenLine(`5`, `{}`))
		requireError(t, h.recv(), `5`, jsonrpc.CodeInternalError, wiremsg.CapacityExhausted)
		require.ErrorIs(t, next(jsonrpc.CodeInternalError, wiremsg.CapacityExhausted), listen.ErrOverloaded)

		h.send(cancelLine(`1`, "bye")) // frees the slot
		h.closedReason()
		h.send(listenLine(`"fails"`, `{}`))
		requireError(t, h.recv(), `"fails"`, jsonrpc.CodeInternalError, wiremsg.SourceFailedToOpen)
		next(jsonrpc.CodeInternalError, wiremsg.SourceFailedToOpen)

		// Not listens: not reported.
		h.send(requestLine(`6`, "tools/list"))
		requireError(t, h.recv(), `6`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Empty(t, errs)
	})
}
