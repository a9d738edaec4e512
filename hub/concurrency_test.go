package hub_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// Concurrent publishers, pullers, opens, closes and stats, under -race:
// every listener receives each publisher's events in that publisher's
// order, and receipts plus drops add up to the matches.
func TestConcurrentPublishersAndListeners(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   hub.Options
		noDrop bool
	}{
		{"unbounded enough", hub.Options{MaxBuffer: 1 << 16}, true},
		{"drop oldest", hub.Options{MaxBuffer: 3}, false},
		{"drop newest", hub.Options{MaxBuffer: 3, Overflow: hub.DropNewest}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const publishers, perPublisher, listeners = 4, 400, 12
			h := newHub(t, tc.opts)
			filters := []listen.Filter{
				{spec.KeyToolsListChanged: true},
				{spec.KeyResourceSubscriptions: []any{"file:///p0", "file:///p1"}},
				{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{"file:///p2"}},
				{"taskIds": []any{"t0", "t1", "t2", "t3"}},
			}
			type receipt struct{ pub, seq int }
			got := make([][]receipt, listeners)
			var pullers sync.WaitGroup
			for i := range listeners {
				s := openStream(t, h, "l", filters[i%len(filters)])
				pullers.Go(func() {
					defer s.Close(listen.ErrComplete)
					for {
						ev, err := s.Next()
						if err != nil {
							return
						}
						got[i] = append(got[i], receipt{ev.Metadata["pub"].(int), ev.Metadata["seq"].(int)})
					}
				})
			}

			var matched, dropped atomic.Int64
			var publishing sync.WaitGroup
			for p := range publishers {
				publishing.Go(func() {
					for seq := range perPublisher {
						meta := map[string]any{"pub": p, "seq": seq}
						var ev listen.Event
						switch seq % 3 {
						case 0:
							ev = listen.ToolsListChanged()
						case 1:
							ev = listen.ResourceUpdated([]string{"file:///p0", "file:///p1", "file:///p2"}[p%3])
						default:
							ev = listen.ExtensionEvent("x", listen.Filter{"taskIds": []any{[]string{"t0", "t1", "t2", "t3"}[p]}}, nil)
						}
						r, err := h.Publish(ev.WithMetadata(meta))
						if err != nil {
							panic(err)
						}
						matched.Add(int64(r.Matched))
						dropped.Add(int64(r.Dropped))
					}
				})
			}
			// Churn: listeners come and go while publishing runs.
			stop := make(chan struct{})
			var churn sync.WaitGroup
			churn.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					_, s, err := h.Open(context.Background(), nil, filters[i%len(filters)])
					if err != nil {
						panic(err)
					}
					if i%2 == 0 {
						r, err := h.Publish(listen.ToolsListChanged().WithMetadata(map[string]any{"pub": -1, "seq": i}))
						if err != nil {
							panic(err)
						}
						matched.Add(int64(r.Matched))
						dropped.Add(int64(r.Dropped))
					}
					_ = h.Stats()
					s.Close(listen.Cancelled("churn"))
				}
			})
			publishing.Wait()
			close(stop)
			churn.Wait()
			h.Complete()
			pullers.Wait()

			var total int64
			steady := make([]int, listeners) // receipts from the publishers
			for i, rs := range got {
				total += int64(len(rs))
				last := map[int]int{}
				for _, r := range rs {
					if r.pub >= 0 {
						steady[i]++
					}
					prev, seen := last[r.pub]
					require.True(t, !seen || r.seq > prev, "listener %d: publisher %d out of order", i, r.pub)
					last[r.pub] = r.seq
				}
			}
			st := h.Stats()
			assert.Equal(t, uint64(dropped.Load()), st.Dropped)
			assert.Equal(t, 0, st.Subscriptions)
			assert.Equal(t, 0, st.Queued)
			assert.Empty(t, h.CheckIndex())
			// Churned listeners were closed with whatever they had queued:
			// receipts plus drops cannot exceed matches.
			require.LessOrEqual(t, total+dropped.Load(), matched.Load())
			if tc.noDrop {
				assert.Zero(t, dropped.Load())
				// Every steady listener got every event its filter selects:
				// tools listeners a third of each publisher's events, etc.
				// seq%3 == 0: tools (every publisher); 1: the URI of
				// publisher p%3; 2: the task of publisher p.
				var perKind [3]int
				for seq := range perPublisher {
					perKind[seq%3]++
				}
				wants := []int{
					publishers * perKind[0],            // tools
					3 * perKind[1],                     // p0 (publishers 0 and 3), p1 (publisher 1)
					publishers*perKind[0] + perKind[1], // tools, p2 (publisher 2)
					publishers * perKind[2],            // every task
				}
				for i := range got {
					assert.Equal(t, wants[i%len(filters)], steady[i], "listener %d", i)
				}
			}
		})
	}
}
