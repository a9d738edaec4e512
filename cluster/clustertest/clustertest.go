// Package clustertest helps test a bridge between instances (natsbridge,
// redisbridge, or one of your own over package cluster): Record, which
// hands every call of a bridge's hooks to a channel, and Await, which
// waits on such a channel; Churn and CheckQuota, which test a bridge's
// cluster.Quota under a churn of listens (see quota.go's Churn for its
// goroutines; the rest starts none).
package clustertest

import (
	"testing"
	"time"

	"github.com/mcplisten/listen/cluster"
)

// Recorder holds the channels Record's hooks send to, for a test to wait
// on. The channels are buffered (1,024 connection changes, resyncs and
// drops; 65,536 receptions and publications); a hook blocks when its
// channel is full.
type Recorder struct {
	Conns   chan cluster.ConnectionInfo
	Resyncs chan cluster.ResyncInfo
	Drops   chan cluster.DropInfo
	Recvs   chan cluster.ReceiveInfo
	Outs    chan cluster.PublishOutInfo
	// Block, if set, is received from by the OnReceive hook before it
	// returns: a test holds a bridge's delivery with it.
	Block chan struct{}
}

// Record sets the five hooks of o (OnConnection, OnResync, OnDrop,
// OnReceive, OnPublishOut) to send what they are told to the channels of
// the Recorder it returns, replacing the hooks o had.
func Record(o *cluster.Options) *Recorder {
	r := &Recorder{
		Conns:   make(chan cluster.ConnectionInfo, 1024),
		Resyncs: make(chan cluster.ResyncInfo, 1024),
		Drops:   make(chan cluster.DropInfo, 1024),
		Recvs:   make(chan cluster.ReceiveInfo, 1<<16),
		Outs:    make(chan cluster.PublishOutInfo, 1<<16),
	}
	o.OnConnection = func(i cluster.ConnectionInfo) { r.Conns <- i }
	o.OnResync = func(i cluster.ResyncInfo) { r.Resyncs <- i }
	o.OnDrop = func(i cluster.DropInfo) { r.Drops <- i }
	o.OnPublishOut = func(i cluster.PublishOutInfo) { r.Outs <- i }
	o.OnReceive = func(i cluster.ReceiveInfo) {
		if r.Block != nil {
			<-r.Block
		}
		r.Recvs <- i
	}
	return r
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
