package stdio

import (
	"bytes"
	"context"
	"io"
	"sync"
)

// Lines returns the peer's side of the Conn as newline-delimited JSON-RPC,
// for a peer that serves an io.Reader and an io.Writer (an MCP server's own
// stdio loop, for one): r reads the messages for the peer, each followed by
// '\n' (ReadMessage), and every line written to w is one message the peer
// writes (WriteMessage; blank lines are skipped). Everything Conn says of
// ReadMessage and WriteMessage holds: ids, bounds, cancellations.
//
// A Read waits for a message and fails as ReadMessage does (io.EOF once
// the input ended or the connection was drained). A Write returns once
// every whole line in it was written, and fails as WriteMessage does; a
// last line without its '\n' is held until a later Write completes it, so
// a peer should write whole lines (concurrent Writes of whole lines are
// fine). The peer must still call Close once it is done.
//
// r and w are safe for concurrent use.
func (pc *Conn) Lines() (r io.Reader, w io.Writer) {
	return &lineReaderPeer{c: pc}, &lineWriterPeer{c: pc}
}

// lineReaderPeer is the io.Reader of Lines.
type lineReaderPeer struct {
	c   *Conn
	mu  sync.Mutex
	buf []byte // the rest of the current message and its '\n'
}

func (lr *lineReaderPeer) Read(p []byte) (int, error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	if len(lr.buf) == 0 {
		m, err := lr.c.ReadMessage(context.Background())
		if err != nil {
			return 0, err
		}
		lr.buf = append(m, '\n')
	}
	n := copy(p, lr.buf)
	lr.buf = lr.buf[n:]
	return n, nil
}

// lineWriterPeer is the io.Writer of Lines.
type lineWriterPeer struct {
	c       *Conn
	mu      sync.Mutex
	partial []byte // a line not ended yet
}

func (lw *lineWriterPeer) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			lw.partial = append(lw.partial, rest...)
			return len(p), nil
		}
		done := len(p) - len(rest) // written before this line
		line := rest[:i]
		if len(lw.partial) > 0 {
			line = append(lw.partial, line...)
			lw.partial = nil
		}
		rest = rest[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := lw.c.WriteMessage(context.Background(), line); err != nil {
			return done, err
		}
	}
}
