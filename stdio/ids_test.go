package stdio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// Ids are matched by their exact JSON token: lone surrogates that decode to
// the same U+FFFD are different ids, so cancelling one never cancels the
// other (before, both were rewritten to "\ufffd" and collided).
func TestCancellationMatchesTheIDsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, nil)
		a := h.openListen(`"\ud800"`)
		h.openListen(`"\udfff"`)

		h.send(cancelLine(`"\udfff"`, "only this one"))
		c := h.closedReason()
		requireReason(t, c, `"\udfff"`, listen.ErrCancelled)

		a.Send(listen.ToolsListChanged())
		m := h.recv()
		require.Equal(t, "notifications/tools/list_changed", m.method())
		require.Equal(t, `"\ud800"`, m.subID(), "the other listen is untouched and keeps its id as sent")

		h.send("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"subscriptions/listen\",\"params\":{}}")
		m = h.recv()
		require.Equal(t, -32600, m.err().Code, "an id that is not valid UTF-8 is refused")
		h.quiet()
		_, err := h.closeInput()
		require.NoError(t, err)
	})
}

// The id of every message is bounded by Options.Listen.MaxIDBytes (256
// bytes by default): a listen, a request of any other method, or (on a
// Conn) a response for the peer whose id is longer is answered with -32600
// "Invalid request: id must be at most <N> bytes" without an id, and
// neither opened, handed to the Handler nor forwarded; a cancellation
// naming such an id is ignored. Before, any id was taken, kept while in
// flight and repeated in every message of its listen.
func TestIDBound(t *testing.T) {
	long := `"` + strings.Repeat("i", 255) + `"` // 257 bytes
	const tooLarge = "Invalid request: id must be at most 256 bytes"
	for _, conn := range []bool{false, true} {
		t.Run(fmt.Sprintf("conn %v", conn), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				handled := make(chan string, 8)
				opts := &options{Options: stdio.Options{Handler: stdio.HandlerFunc(func(_ context.Context, m jsonrpc.Message) (json.RawMessage, error) {
					handled <- m.ID.Raw()
					return nil, nil
				})}}
				h := startHarness(t, t.Context(), nil, opts, conn)
				var forwarded chan string
				if conn {
					forwarded, _ = h.peerReads()
				}
				h.openListen(`"` + strings.Repeat("i", 254) + `"`) // 256 bytes: served
				for _, line := range []string{
					listenLine(long, `{"toolsListChanged":true}`),
					requestLine(long, "tools/list"),
					`{"jsonrpc":"2.0","id":` + long + `,"result":{}}`,
					`{"jsonrpc":"2.0","id":` + strings.Repeat("7", 257) + `,"method":"ping"}`,
				} {
					h.send(line)
					m := h.recv()
					requireError(t, m, "", jsonrpc.CodeInvalidRequest, tooLarge)
					require.NotContains(t, string(m.raw), `"id"`)
				}
				h.send(cancelLine(long, "names no request"))
				h.quiet()
				require.Empty(t, h.src.Streams()[1:], "no listen opened for the long id")
				require.Empty(t, handled, "the Handler got none")
				var err error
				if conn {
					require.Empty(t, forwarded, "the peer got none")
					_, err = h.endConn(false)
				} else {
					_, err = h.closeInput()
				}
				require.NoError(t, err)
			})
		})
	}

	// The bound is the option's.
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{MaxIDBytes: 1000}})
		h.openListen(`"` + strings.Repeat("i", 998) + `"`)
		h.send(listenLine(`"`+strings.Repeat("i", 999)+`"`, `{}`))
		requireError(t, h.recv(), "", jsonrpc.CodeInvalidRequest, "Invalid request: id must be at most 1000 bytes")
		h.quiet()
		_, err := h.closeInput()
		require.NoError(t, err)
	})
}
