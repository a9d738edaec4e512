package stdio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// paddedRequest returns a request line of exactly size bytes.
func paddedRequest(id int, size int) string {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"pad":"`, id)
	return head + strings.Repeat("x", size-len(head)-len(`"}}`)) + `"}}`
}

// The requests in flight (handed to the Handler or to a Conn's peer, not
// answered yet) add up to at most MaxLineBytes, as MaxInFlight bounds
// their number: with MaxLineBytes 1000, two requests of 400 bytes are in
// flight and a third waits, unread by the peer, until one is answered; a
// lone request is always let in. Before, MaxInFlight (64) requests of up
// to MaxLineBytes each were in flight at once: 64 lines of 1 MB behind the
// mcp-go adapter, which serves each on its own goroutine, held 40 MiB of
// RSS against the go-sdk adapter's 18.
func TestInFlightBytes(t *testing.T) {
	t.Run("a Conn's peer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startConn(t, t.Context(), nil, &options{Options: stdio.Options{MaxLineBytes: 1000}})
			msgs, _ := h.peerReads()
			go func() { // the client's writes wait while the connection does not read
				for i := range 4 {
					_, _ = h.in.Write([]byte(paddedRequest(i+1, 400) + "\n"))
				}
			}()
			synctest.Wait()
			require.Len(t, msgs, 2, "two requests of 400 bytes in flight, not three")
			<-msgs
			<-msgs
			h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			require.Equal(t, `1`, h.recv().id())
			synctest.Wait()
			require.Len(t, msgs, 1, "the third once the first was answered")
			require.Contains(t, <-msgs, `"id":3,`)
			for _, id := range []string{"2", "3"} {
				h.peerWrite(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
				require.Equal(t, id, h.recv().id())
			}
			synctest.Wait()
			require.Contains(t, <-msgs, `"id":4,`)
			h.peerWrite(`{"jsonrpc":"2.0","id":4,"result":{}}`)
			require.Equal(t, `4`, h.recv().id())

			h.send(paddedRequest(5, 1000)) // alone: let in whole
			synctest.Wait()
			require.Contains(t, <-msgs, `"id":5,`)
			h.peerWrite(`{"jsonrpc":"2.0","id":5,"result":{}}`)
			require.Equal(t, `5`, h.recv().id())
			_, err := h.endConn(false)
			require.NoError(t, err)
		})
	})

	t.Run("the Handler", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := make(chan chan struct{}, 8)
			h := start(t, t.Context(), nil, &options{Options: stdio.Options{MaxLineBytes: 1000, Handler: stdio.HandlerFunc(
				func(ctx context.Context, m jsonrpc.Message) (json.RawMessage, error) {
					release := make(chan struct{})
					calls <- release
					<-release
					return nil, nil
				})}})
			go func() {
				for i := range 3 {
					_, _ = h.in.Write([]byte(paddedRequest(i+1, 400) + "\n"))
				}
			}()
			synctest.Wait()
			require.Len(t, calls, 2, "two calls of 400 bytes run, not three")
			close(<-calls) // the two calls run at once: either may come first
			first := h.recv().id()
			require.Contains(t, []string{"1", "2"}, first)
			synctest.Wait()
			require.Len(t, calls, 2, "the third once the first was answered")
			close(<-calls)
			close(<-calls)
			require.ElementsMatch(t, []string{"1", "2", "3"}, []string{first, h.recv().id(), h.recv().id()})
			_, err := h.closeInput()
			require.NoError(t, err)
		})
	})
}
