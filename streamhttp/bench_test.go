package streamhttp_test

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcplisten/listen/hub"
)

// BenchmarkHubFanout publishes one tools list change to N open hub streams
// over loopback HTTP/1.1 and waits until every client has read it: one op
// is one fan-out, on the fast path (Linux) and on the portable one (a
// goroutine per stream). The clients run in the same process, so the
// figures include their reads: compare the two paths with each other.
//
//	go test -run '^$' -bench HubFanout -benchmem -count 5 ./streamhttp
func BenchmarkHubFanout(b *testing.B) {
	for _, p := range hubPaths {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/N=%d", p.name, n), func(b *testing.B) {
				e := newHubEnv(b, p.portable, hub.Options{}, config{MaxStreams: n + 16, KeepAlive: failsafe}, 0)
				var got atomic.Int64
				var wg sync.WaitGroup
				conns := make([]*rawListen, n)
				for i := range conns {
					c := e.dial(b, fmt.Sprintf(`"s%d"`, i), `{"toolsListChanged":true}`, "", 0).open(b)
					conns[i] = c
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							line, err := c.br.ReadSlice('\n')
							if err != nil {
								return
							}
							if bytes.Contains(line, []byte("list_changed")) {
								got.Add(1)
							}
						}
					}()
				}
				b.Cleanup(func() {
					for _, c := range conns {
						c.conn.Close()
					}
					wg.Wait()
				})
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					want := int64(n) * int64(i+1)
					e.hub.ToolsListChanged()
					for got.Load() < want {
						runtime.Gosched()
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/notification")
			})
		}
	}
}
