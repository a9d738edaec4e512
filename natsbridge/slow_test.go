package natsbridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/natsbridge"
)

// TestSlowConsumer: messages nats.go drops over the subscription's pending
// limits are counted, and the listeners are told to refetch.
func TestSlowConsumer(t *testing.T) {
	ns := startNATS(t, 0)
	co := cluster.Options{Resync: []listen.Kind{listen.KindToolsListChanged}}
	rec := record(&co)
	rec.Block = make(chan struct{})
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsbridge.Options{PendingMessages: 4, Options: co})
	b.rec = rec
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)
	raw := connect(t, ns.ClientURL())
	const total = 50
	for i := 1; i <= total; i++ {
		msg := fmt.Appendf(nil, `{"v":1,"o":"peer","n":%d,"k":"tools","m":{%q:"%d"}}`, i, idKey, i)
		require.NoError(t, raw.Publish(b.bridge.Subject(), msg))
	}
	require.NoError(t, raw.Flush())
	// The delivery goroutine is held in OnReceive of the first message: the
	// rest piles up over the limit of 4 and nats.go drops it.
	d := await(t, rec.Drops, "the slow consumer drop", nil)
	assert.Equal(t, "slow_consumer", d.Reason)
	assert.Positive(t, d.Count)
	close(rec.Block)

	await(t, rec.Resyncs, "the loss resync", func(r cluster.ResyncInfo) bool {
		return r.Reason == "loss"
	})
	// A fence after the backlog shows the bridge still delivers. A fence
	// can itself be dropped while the backlog drains (the pending queue is
	// full), and then a queued message is still to come: send another fence
	// after each delivery of a backlog message, or drop, until one is
	// through.
	fence := total
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	seen := map[string]int{}
	resyncs := 0
send:
	for {
		fence++
		msg := fmt.Appendf(nil, `{"v":1,"o":"peer","n":%d,"k":"tools","m":{%q:"fence"}}`, fence, idKey)
		require.NoError(t, raw.Publish(b.bridge.Subject(), msg))
		for {
			select {
			case n := <-s.notes:
				switch n.id {
				case "fence":
					break send
				case "":
					resyncs++
				default:
					seen[n.id]++
				}
			case r := <-rec.Recvs:
				if r.Seq <= total { // a backlog message: the fence may have been dropped
					continue send
				}
			case <-rec.Drops:
				continue send
			case <-timer.C:
				require.FailNow(t, "timed out waiting for the fence")
			}
		}
	}
	st := b.bridge.Stats()
	for id, c := range seen {
		assert.Equal(t, 1, c, id)
	}
	assert.GreaterOrEqual(t, resyncs, 1)
	assert.Positive(t, st.Dropped.SlowConsumer)
	assert.Positive(t, st.Gaps)
	assert.LessOrEqual(t, st.Received+st.Dropped.SlowConsumer, uint64(fence), "each message counted once")
}
