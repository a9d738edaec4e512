package gosdk

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzRoute feeds arbitrary input to the stdio router: it never panics,
// every non-blank line reaches the multiplexer or the go-sdk (a
// cancellation both), in order, and no line reaches the multiplexer longer
// than maxLine+1 bytes.
func FuzzRoute(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"))
	f.Add([]byte("not json\n\n  \r\n{\"id\":1}"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`))
	f.Add(bytes.Repeat([]byte("x"), 300))
	const maxLine = 64
	f.Fuzz(func(t *testing.T, input []byte) {
		listenR, listenW := io.Pipe()
		peer := &peerConn{in: make(chan sdkjsonrpc.Message), done: make(chan struct{})}
		var toMux []string
		muxDone := make(chan struct{})
		go func() {
			defer close(muxDone)
			sc := bufio.NewScanner(listenR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				toMux = append(toMux, sc.Text())
			}
		}()
		var toPeer int
		peerDone := make(chan struct{})
		go func() {
			defer close(peerDone)
			for range peer.in {
				toPeer++
			}
		}()
		if err := route(bytes.NewReader(input), maxLine, listenW, peer); err != nil {
			t.Fatal(err)
		}
		<-muxDone
		<-peerDone
		lines := 0
		cancels := 0
		for l := range strings.Lines(string(input)) {
			if strings.TrimSpace(l) != "" {
				lines++
				if strings.Contains(l, `"notifications/cancelled"`) {
					cancels++
				}
			}
		}
		for _, l := range toMux {
			if len(l) > maxLine+1 {
				t.Fatalf("a %d-byte line reached the multiplexer", len(l))
			}
		}
		if got := len(toMux) + toPeer; got < lines || got > lines+cancels {
			t.Fatalf("%d lines in, %d to the multiplexer and %d to the go-sdk", lines, len(toMux), toPeer)
		}
	})
}
