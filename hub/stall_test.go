package hub_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// One listener never pulls while others keep pulling: the others receive
// every event, Publish goes on without waiting (each report is the same
// whatever the stalled backlog), and the stalled queue stays bounded with
// its drops counted.
func TestStalledListenerDoesNotHoldBackOthers(t *testing.T) {
	for _, policy := range []hub.Overflow{hub.DropOldest, hub.DropNewest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const maxBuf, active, events = 8, 4, 1000
				h := newHub(t, hub.Options{MaxBuffer: maxBuf, Overflow: policy})
				stalled := openStream(t, h, "stalled", toolsOnly)

				received := make([][]int, active)
				var wg sync.WaitGroup
				for i := range active {
					s := openStream(t, h, "active", toolsOnly)
					wg.Go(func() {
						for {
							ev, err := s.Next()
							if err != nil {
								s.Close(listen.ErrComplete)
								return
							}
							received[i] = append(received[i], ev.Metadata["seq"].(int))
						}
					})
				}
				synctest.Wait() // every active listener is blocked in Next

				for seq := range events {
					r, err := h.Publish(seqEvent(seq))
					require.NoError(t, err)
					// The active listeners always take the event directly;
					// the stalled one queues it until its bound, then drops.
					want := hub.Report{Matched: active + 1, Delivered: active, Buffered: 1}
					if seq >= maxBuf {
						want.Dropped = 1
						if policy == hub.DropNewest {
							want.Buffered = 0
						}
					}
					require.Equal(t, want, r, "seq %d", seq)
					require.LessOrEqual(t, hub.QueueLen(stalled), maxBuf)
					require.LessOrEqual(t, hub.QueueCap(stalled), maxBuf)
					synctest.Wait() // the active pullers consumed it
				}
				st := h.Stats()
				assert.Equal(t, uint64(events-maxBuf), st.Dropped)
				assert.Equal(t, maxBuf, st.Queued)

				h.Complete()
				wg.Wait()
				for i := range active {
					require.Len(t, received[i], events)
					for seq, got := range received[i] {
						require.Equal(t, seq, got)
					}
				}
				// The stalled listener kept the newest (DropOldest) or the
				// oldest (DropNewest) maxBuf events, in order.
				first := events - maxBuf
				if policy == hub.DropNewest {
					first = 0
				}
				for i := range maxBuf {
					assert.Equal(t, first+i, seqOf(t, mustNext(t, stalled)))
				}
				_, err := stalled.Next()
				assert.ErrorIs(t, err, listen.ErrClosed)
				stalled.Close(listen.ErrComplete)
			})
		})
	}
}

// The cost of a publication does not depend on a stalled listener's
// backlog: with the stalled queue empty or saturated, a publication makes
// the same single allocation (the shared event), and the saturated queue
// never grows past MaxBuffer.
func TestPublishCostIndependentOfBacklog(t *testing.T) {
	const maxBuf = 64
	h := newHub(t, hub.Options{MaxBuffer: maxBuf})
	stalled := openStream(t, h, "stalled", toolsOnly)
	puller := openStream(t, h, "puller", toolsOnly)

	publishAndPull := func() {
		h.ToolsListChanged()
		mustNext(t, puller)
	}
	// Warm up the puller's ring, then measure with the stalled queue short.
	publishAndPull()
	_, _ = stalled.Next()
	allocsShort := testing.AllocsPerRun(maxBuf/2, publishAndPull)

	for range 10 * maxBuf {
		publishAndPull()
	}
	require.Equal(t, maxBuf, hub.QueueLen(stalled))
	allocsFull := testing.AllocsPerRun(1000, publishAndPull)
	assert.Equal(t, maxBuf, hub.QueueLen(stalled))
	assert.Equal(t, maxBuf, hub.QueueCap(stalled))
	assert.Equal(t, 1.0, allocsFull, "one allocation per publication: the shared event")
	// The short-backlog run may include the ring's growth steps (4, 8, ...
	// up to MaxBuffer), never more than that.
	assert.LessOrEqual(t, allocsShort, 2.0)
	stalled.Close(nil)
	puller.Close(nil)
}

// Through Serve: a subscription whose client stopped reading (its Sink
// blocks) does not hold back the other subscriptions of the hub.
func TestStalledClientDoesNotHoldBackOtherSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxBuf, events = 4, 200
		h := newHub(t, hub.Options{MaxBuffer: maxBuf})
		opts := serverOptions(nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		gate := make(chan struct{})
		stuck := listen.Sink{Write: func(msg []byte) error {
			if len(msg) > 0 && !isAck(msg) {
				<-gate // the client stopped reading
			}
			return nil
		}}
		var fast sink
		var wg sync.WaitGroup
		for i, s := range []listen.Sink{stuck, fast.Sink()} {
			sub, err := listen.Open(ctx, h, listenRequest([]string{"stuck", "fast"}[i], toolsOnly, false), opts)
			require.NoError(t, err)
			wg.Go(func() { _ = sub.Serve(ctx, s) })
		}
		synctest.Wait()
		fast.take() // the ack

		for seq := range events {
			r, err := h.Publish(seqEvent(seq))
			require.NoError(t, err)
			require.Equal(t, 2, r.Matched)
			synctest.Wait()
			require.Len(t, fast.take(), 1, "seq %d", seq)
		}
		// The stuck subscription holds the first event (blocked in Write);
		// its listener holds the newest maxBuf, the rest dropped: one
		// handed over for the next pull, maxBuf-1 queued.
		st := h.Stats()
		assert.Equal(t, maxBuf-1, st.Queued)
		assert.Equal(t, uint64(events-1-maxBuf), st.Dropped)

		h.Complete()
		close(gate)
		wg.Wait()
		assert.Equal(t, hub.Stats{Dropped: uint64(events - 1 - maxBuf), MaxBuffer: maxBuf}, h.Stats())
	})
}

func isAck(msg []byte) bool {
	return bytes.Contains(msg, []byte(`"method":"notifications/subscriptions/acknowledged"`))
}
