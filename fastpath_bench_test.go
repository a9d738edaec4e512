package listen_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/fastpath"
	"github.com/mcplisten/listen/jsonrpc"
)

// BenchmarkFastPathFanout measures the core's share of a fan-out on the
// fast path, without sockets: one tools list change is published to N hub
// subscriptions served by their Pollers (fastpath.Attach), and each one's
// notification is shaped into a shared buffer as the fast path's loop does
// (Next, Written, then Next again finding nothing). One op is one fan-out;
// ns/notification is what the core adds to each stream's write(2).
//
//	go test -run '^$' -bench FastPathFanout -count 10 .
func BenchmarkFastPathFanout(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			h, err := hub.New(hub.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Shutdown(context.Background())
			var mu sync.Mutex
			ready := make([]fastpath.Poller, 0, n)
			waitReady := func() {
				for {
					mu.Lock()
					k := len(ready)
					mu.Unlock()
					if k == n {
						return
					}
					runtime.Gosched()
				}
			}
			pollers := make([]fastpath.Poller, n)
			for i := range pollers {
				sub := openSub(b, h, jsonrpc.IntID(int64(i)), listen.Filter{"toolsListChanged": true})
				defer sub.Close(nil)
				var p fastpath.Poller
				notify := func() { // on the hub's fan-out goroutine
					mu.Lock()
					ready = append(ready, p)
					mu.Unlock()
				}
				p, ok := fastpath.Attach(sub, notify, nil)
				if !ok {
					b.Fatal("not attached")
				}
				pollers[i] = p
			}
			var buf []byte
			pump := func(ps []fastpath.Poller) {
				for _, p := range ps {
					for {
						step, out := p.Next(buf[:0])
						buf = out
						if step != fastpath.StepWrite {
							break
						}
						p.Written(nil)
					}
				}
			}
			pump(pollers) // the acknowledgements
			drain := func() {
				waitReady()
				mu.Lock() // no notify while the streams are pumped
				pump(ready)
				ready = ready[:0]
				mu.Unlock()
			}
			b.ReportAllocs()
			for b.Loop() {
				h.ToolsListChanged()
				drain()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/notification")
		})
	}
}
