package stdio_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
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
