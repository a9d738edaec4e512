// Package serving counts the calls under way of a server's Serve method
// and lets its Shutdown refuse new ones and wait for the rest: the part of
// the SDK adapters' stdio servers (gosdk.Stdio, mcpgo.Stdio) that is the
// same in both: the Group of Serve calls, the listen multiplexer each
// serves with (NewMux), and the wait for a connection that drains when
// Serve's context ends (Drain).
//
// A Group is safe for concurrent use. Wait starts one goroutine, which
// ends when the last call under way leaves.
package serving

import (
	"context"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/stdio"
)

// Group is a set of calls under way. The zero value is an open Group.
type Group struct {
	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
}

// Enter adds a call, and reports false (adding nothing) once Close was
// called. A call that entered must Leave.
func (g *Group) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.calls.Add(1)
	return true
}

// Leave ends a call that entered.
func (g *Group) Leave() { g.calls.Done() }

// Close makes every later Enter report false. It is idempotent.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait returns once every call that entered has left, or ctx's error if ctx
// ends first.
func (g *Group) Wait(ctx context.Context) error {
	done := make(chan struct{})
	// Ends when the last call leaves.
	go func() {
		g.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NewMux returns the listen multiplexer of an adapter's Stdio: stdio.New
// with so on ls, a listen.Server for src whose options are lo (the
// Bridge's ListenOptions) with SupportedVersions set to versions (the SDK
// server's); so's Handler is set to nil (every other message goes to the
// SDK server).
func NewMux(src listen.Source, lo listen.Options, versions []string, so stdio.Options) (mux *stdio.Server, ls *listen.Server, err error) {
	lo.SupportedVersions = versions
	ls = listen.NewServer(src, lo)
	so.Handler = nil
	mux, err = stdio.New(ls, so)
	return mux, ls, err
}

// Drain returns what served yields (the result of a connection's Serve),
// or, if ctx ends first, context.Cause(ctx) once served yields: the
// connection drains on its own when its context ends, and if it has not
// within timeout, Drain calls cut (which must make Serve return, such as
// closing the connection or the SDK session) and waits for served.
func Drain(ctx context.Context, served <-chan error, timeout time.Duration, cut func()) error {
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-served:
	case <-t.C:
		cut()
		<-served
	}
	return context.Cause(ctx)
}
