// Package clustertest helps test a bridge between instances (natsbridge,
// redisbridge, or one of your own over package cluster): a Recorder,
// cluster.Hooks that hand every call to a channel, and Await, which waits
// on such a channel. It starts no goroutine.
package clustertest

import (
	"testing"
	"time"

	"github.com/mcplisten/listen/cluster"
)

// Recorder is cluster.Hooks (and hub.Hooks, doing nothing) that sends what
// it is told to its channels, for a test to wait on. The channels are
// buffered (1,024 connection changes, resyncs and drops; 65,536
// receptions and publications); a hook blocks when its channel is full.
type Recorder struct {
	cluster.NopSharedHooks
	Conns   chan cluster.ConnectionInfo
	Resyncs chan cluster.ResyncInfo
	Drops   chan cluster.DropInfo
	Recvs   chan cluster.ReceiveInfo
	Outs    chan cluster.PublishOutInfo
	// Block, if set, is received from by OnReceive before it returns: a
	// test holds a bridge's delivery with it.
	Block chan struct{}
}

// NewRecorder returns a Recorder with empty channels.
func NewRecorder() *Recorder {
	return &Recorder{
		Conns:   make(chan cluster.ConnectionInfo, 1024),
		Resyncs: make(chan cluster.ResyncInfo, 1024),
		Drops:   make(chan cluster.DropInfo, 1024),
		Recvs:   make(chan cluster.ReceiveInfo, 1<<16),
		Outs:    make(chan cluster.PublishOutInfo, 1<<16),
	}
}

// OnConnection sends i to Conns.
func (r *Recorder) OnConnection(i cluster.ConnectionInfo) { r.Conns <- i }

// OnResync sends i to Resyncs.
func (r *Recorder) OnResync(i cluster.ResyncInfo) { r.Resyncs <- i }

// OnDrop sends i to Drops.
func (r *Recorder) OnDrop(i cluster.DropInfo) { r.Drops <- i }

// OnPublishOut sends i to Outs.
func (r *Recorder) OnPublishOut(i cluster.PublishOutInfo) { r.Outs <- i }

// OnReceive waits for Block (if set), then sends i to Recvs.
func (r *Recorder) OnReceive(i cluster.ReceiveInfo) {
	if r.Block != nil {
		<-r.Block
	}
	r.Recvs <- i
}

// Await receives from ch until ok (nil: anything) accepts a value and
// returns it; it fails t if ch closes or nothing is accepted within
// timeout.
func Await[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string, ok func(T) bool) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case v, open := <-ch:
			if !open {
				t.Fatalf("channel closed while waiting for %s", what)
			}
			if ok == nil || ok(v) {
				return v
			}
		case <-timer.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
