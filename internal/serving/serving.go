// Package serving counts the calls under way of a server's Serve method
// and lets its Shutdown refuse new ones and wait for the rest: the part of
// the SDK adapters' stdio servers (gosdk.Stdio, mcpgo.Stdio) that is the
// same in both.
//
// A Group is safe for concurrent use. Wait starts one goroutine, which
// ends when the last call under way leaves.
package serving

import (
	"context"
	"sync"
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
