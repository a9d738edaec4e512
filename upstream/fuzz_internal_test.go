package upstream

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcplisten/listen/jsonrpc"
)

// The SSE reader never panics, never returns a message over its bound,
// and ends every body with one of its errors.
func FuzzSSE(f *testing.F) {
	f.Add("event: message\ndata: {}\n\n: keep-alive\n\n")
	f.Add("data: a\ndata: b\r\n\r\nevent: other\ndata: c\n\n")
	f.Add(":\n\ndata:" + strings.Repeat("x", 300) + "\n\n")
	f.Add("data: cut")
	f.Fuzz(func(t *testing.T, body string) {
		const max = 256
		s := newSSEMessages(io.NopCloser(strings.NewReader(body)), func() {}, -1, nil, max)
		defer s.Close()
		for range len(body) + 1 {
			m, err := s.Next()
			if err != nil {
				if !errors.Is(err, ErrDropped) && !errors.Is(err, errTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(m) > max {
				t.Fatalf("a message of %d bytes over the bound %d", len(m), max)
			}
		}
		t.Fatal("more messages than bytes")
	})
}

// Routing a stdio line and decoding a listen's message never panic, and a
// message routed to a listen is one it could accept.
func FuzzStdioMessage(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":"1"}}}`)
	f.Fuzz(func(t *testing.T, line string) {
		key, ok := routeKey([]byte(line))
		s := &Stream{id: jsonrpc.IntID(1), msgs: &oneMessage{msg: []byte(line)}}
		_, err := s.Next()
		if ok && key == "1" && err != nil && !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrCompleted) {
			var e *jsonrpc.Error
			if !errors.As(err, &e) {
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}
