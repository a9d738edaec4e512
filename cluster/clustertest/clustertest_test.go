package clustertest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/cluster/clustertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every hook reaches its channel; Await skips what ok refuses; Block holds
// OnReceive until the test lets it go.
func TestRecorder(t *testing.T) {
	var h cluster.Options
	r := clustertest.Record(&h)
	h.OnConnection(cluster.ConnectionInfo{Status: "disconnected"})
	h.OnConnection(cluster.ConnectionInfo{Status: "connected", Reconnects: 1})
	h.OnResync(cluster.ResyncInfo{Reason: "loss"})
	h.OnDrop(cluster.DropInfo{Reason: "stale"})
	h.OnPublishOut(cluster.PublishOutInfo{Seq: 7})
	got := clustertest.Await(t, r.Conns, time.Second, "the reconnection", func(c cluster.ConnectionInfo) bool {
		return c.Status == "connected"
	})
	assert.Equal(t, uint64(1), got.Reconnects)
	assert.Equal(t, "loss", clustertest.Await(t, r.Resyncs, time.Second, "a resync", nil).Reason)
	assert.Equal(t, "stale", clustertest.Await(t, r.Drops, time.Second, "a drop", nil).Reason)
	assert.Equal(t, uint64(7), clustertest.Await(t, r.Outs, time.Second, "a publication", nil).Seq)

	synctest.Test(t, func(t *testing.T) {
		r.Block = make(chan struct{})
		done := make(chan struct{})
		go func() { // ends once Block lets OnReceive return
			defer close(done)
			h.OnReceive(cluster.ReceiveInfo{Seq: 3})
		}()
		synctest.Wait() // the hook is blocked on Block
		assert.Empty(t, r.Recvs, "OnReceive waits for Block")
		r.Block <- struct{}{}
		assert.Equal(t, uint64(3), clustertest.Await(t, r.Recvs, time.Second, "the reception", nil).Seq)
		<-done
	})
}
