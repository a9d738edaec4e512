package listen_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/fastpath"
	"github.com/mcplisten/listen/jsonrpc"
)

// A drain whose goroutine was held up (a starved process: here one
// stream's notify, which the drain calls as it ends the stream, blocks for
// a second of the bubble's clock) does not end every stream it is late for
// at once: it catches up at most 10% faster than its schedule, so that the
// re-listens never exceed 1.25 times the even rate in any second. Every
// stream still ends within the window.
func TestServerDrainCatchesUpGradually(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		const window = 20 * time.Second // 50 ends a second
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		srv := listen.NewServer(h, listen.Options{Capabilities: allCaps, DrainWindow: window, MaxStreamsPerKey: -1})
		var start time.Time
		var mu sync.Mutex
		var ends []time.Duration
		var served sync.WaitGroup
		for i := range n {
			req := request(jsonrpc.IntID(int64(i)), listen.Filter{"toolsListChanged": true})
			sl, err := admit(srv, req)
			require.NoError(t, err)
			sub, err := sl.Open(context.Background(), context.Background(), req)
			require.NoError(t, err)
			var p fastpath.Poller
			var once sync.Once
			p, ok := fastpath.Attach(sub, func() {
				once.Do(func() { // the drain ends the stream
					mu.Lock()
					ends = append(ends, time.Since(start))
					stall := len(ends) == n/4
					mu.Unlock()
					if stall {
						time.Sleep(time.Second) // the drain's goroutine, held up
					}
					served.Go(func() { // writes the acknowledgement and the completion
						for {
							switch step, _ := p.Next(nil); step {
							case fastpath.StepWrite:
								p.Written(nil)
							case fastpath.StepDone:
								sl.Done(sub.CloseReason())
								return
							default:
								t.Error("the ended stream waits")
								return
							}
						}
					})
				})
			}, nil)
			require.True(t, ok, "a hub stream can be taken in steps")
		}

		start = time.Now()
		require.NoError(t, srv.Shutdown(context.Background()))
		served.Wait()
		require.Len(t, ends, n)
		assert.Less(t, slices.Max(ends), window, "every stream ended within the window")
		most := 0
		for i, j := 0, 0; j < len(ends); j++ {
			for ends[j]-ends[i] >= time.Second {
				i++
			}
			most = max(most, j-i+1)
		}
		t.Logf("most ends in any second: %d (even: %d)", most, n/int(window/time.Second))
		assert.LessOrEqual(t, most, n*5/4/int(window/time.Second), "most ends in any second")
		require.NoError(t, h.Shutdown(context.Background()))
	})
}
