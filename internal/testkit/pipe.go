package testkit

import (
	"context"
	"net"
	"sync"
)

// PipeListener is an in-memory net.Listener whose connections are
// net.Pipe ends, so that an http.Server serving a listen handler and its
// clients can run inside a testing/synctest bubble (loopback sockets
// cannot: their blocking is not durable). Serve an http.Server on it and
// give its Dial to the client's http.Transport as DialContext, or call
// Dial for a raw connection.
//
// A pipe has no buffer: a client that does not read stalls the server's
// next write, which is how a test makes a stalled client.
type PipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewPipeListener returns an open PipeListener.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next Dial and returns the server's end of its
// pipe, or net.ErrClosed once the listener is closed.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and Dial return net.ErrClosed. Connections already
// made stay open. Close is idempotent.
func (l *PipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the listener's address: network "pipe", address "pipe".
func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

// Dial connects a new pipe: it returns the client's end once Accept has
// taken the server's, or an error when the listener is closed
// (net.ErrClosed) or ctx ends first. The network and address are ignored;
// its signature is that of http.Transport.DialContext.
func (l *PipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
