package gosdk

import (
	"context"
	"runtime"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The goroutine that answers a ping the server sends over a link has ended
// when Close returns: a ping nobody takes the answer of (the session's reader
// has stopped) leaves nothing behind Close.
//
// With one P, and the check's buffer allocated and a collection done
// beforehand (so that no GC assist parks the test goroutine), nothing but
// Close itself lets that goroutine run before the check: a Close that does
// not wait for it finds it still there.
func TestLinkCloseWaitsForPingAnswer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	buf := make([]byte, 1<<20)
	runtime.GC()
	l := newLink(nil, nil)
	for i := range 3 {
		id, err := sdkjsonrpc.MakeID(float64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write(context.Background(), &sdkjsonrpc.Request{ID: id, Method: "ping"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pingAnswerers(buf); n > 0 {
		t.Fatalf("%d goroutines answering a ping outlived Close", n)
	}
	// A ping after Close starts nothing.
	id, _ := sdkjsonrpc.MakeID(float64(4))
	if err := l.Write(context.Background(), &sdkjsonrpc.Request{ID: id, Method: "ping"}); err != errLinkClosed {
		t.Fatalf("Write after Close: %v, want errLinkClosed", err)
	}
	if n := pingAnswerers(buf); n > 0 {
		t.Fatalf("a ping after Close started %d goroutines", n)
	}
}

// pingAnswerers counts the goroutines running link.Write's answer, with buf
// for the stacks (grown if too small).
func pingAnswerers(buf []byte) int {
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "gosdk.(*link).Write.func")
}
