package hub_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// Benchmarks against the goals of the hub issue (2-core machine):
//
//   - publish one tools list change to 100,000 listeners: <= 20 ms
//   - publish one resource update, 100,000 listeners each on its own URI:
//     <= 2 us, flat across 1k/10k/100k listeners
//   - open + close of a hub listener: <= 2 us
//   - memory per idle hub listener: <= 1 KiB (custom metric B/listener)
//
// Run: go test ./hub/ -run '^$' -bench . -benchmem -count 5

// openMany opens n listeners, closed when the benchmark ends (outside the
// timer).
func openMany(b *testing.B, h *hub.Hub, n int, filter func(i int) listen.Filter) []listen.Stream {
	b.Helper()
	req := request("bench")
	streams := make([]listen.Stream, n)
	for i := range n {
		_, s, err := h.Open(context.Background(), req, filter(i))
		if err != nil {
			b.Fatal(err)
		}
		streams[i] = s
	}
	// Cleanup, not defer: a deferred close of 100,000 listeners would run
	// inside the timed region.
	b.Cleanup(func() { closeAll(streams) })
	return streams
}

func closeAll(streams []listen.Stream) {
	for _, s := range streams {
		s.Close(listen.ErrComplete)
	}
}

// BenchmarkPublishToolsListChanged publishes one tools list change to
// 100,000 listeners. "buffered": every queue is drained between
// publications (outside the timer), so each listener queues the event;
// "overflow": every queue is full, so each listener drops its oldest event.
func BenchmarkPublishToolsListChanged(b *testing.B) {
	const n = 100_000
	tools := listen.Filter{spec.KeyToolsListChanged: true}
	for _, mode := range []string{"buffered", "overflow"} {
		b.Run(fmt.Sprintf("listeners=%d/%s", n, mode), func(b *testing.B) {
			h := newHub(b, hub.Options{})
			streams := openMany(b, h, n, func(int) listen.Filter { return tools })
			if mode == "overflow" {
				for range hub.DefaultMaxBuffer {
					h.ToolsListChanged()
				}
			} else {
				// Let every ring reach its first size.
				h.ToolsListChanged()
				drain(b, streams)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r := h.ToolsListChanged()
				if r.Matched != n {
					b.Fatalf("matched %d", r.Matched)
				}
				if mode == "buffered" {
					b.StopTimer()
					drain(b, streams)
					b.StartTimer()
				}
			}
		})
	}
}

func drain(b *testing.B, streams []listen.Stream) {
	for _, s := range streams {
		if _, err := s.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishResourceUpdated publishes one resource update when every
// listener watches its own URI.
//
//   - "rotating": each publication targets the next URI in turn, so
//     successive publications touch different listeners (and, at 100k, miss
//     the CPU caches). After each full round every listener holds one
//     event; the queues are drained then, outside the timer, so the state
//     does not depend on b.N.
//   - "same-uri": every publication targets one URI (its queue is full, so
//     each publication replaces the oldest event): the cost with hot caches.
func BenchmarkPublishResourceUpdated(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, mode := range []string{"rotating", "same-uri"} {
			b.Run(fmt.Sprintf("listeners=%d/%s", n, mode), func(b *testing.B) {
				h := newHub(b, hub.Options{})
				uris := make([]string, n)
				for i := range uris {
					uris[i] = uri("r", i)
				}
				streams := openMany(b, h, n, func(i int) listen.Filter {
					return listen.Filter{spec.KeyResourceSubscriptions: []any{uris[i]}}
				})
				// One warm-up round: every ring gets its first buffer.
				for _, u := range uris {
					_, _ = h.ResourceUpdated(u)
				}
				drain(b, streams)
				target := uris[n/2]
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for range b.N {
					u := target
					if mode == "rotating" {
						u = uris[i]
					}
					r, err := h.ResourceUpdated(u)
					if err != nil || r.Matched != 1 {
						b.Fatalf("matched %d, err %v", r.Matched, err)
					}
					if i++; i == n {
						i = 0
						if mode == "rotating" {
							b.StopTimer()
							drain(b, streams)
							b.StartTimer()
						}
					}
				}
			})
		}
	}
}

// BenchmarkOpenClose opens and closes one hub listener whose filter holds a
// list change and one resource URI, on an empty hub and on a hub that
// already has 100,000 listeners (on other URIs).
func BenchmarkOpenClose(b *testing.B) {
	filters := make([]listen.Filter, 1024)
	for i := range filters {
		filters[i] = listen.Filter{
			spec.KeyToolsListChanged:      true,
			spec.KeyResourceSubscriptions: []any{uri("oc", i)},
		}
	}
	for _, tc := range []struct {
		name   string
		others int
		logger *slog.Logger
	}{
		{"others=0", 0, nil},
		{"others=100000", 100_000, nil},
		{"others=0/slog-hooks-at-info", 0, slog.New(slog.NewTextHandler(io.Discard, nil))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHub(b, hub.Options{Logger: tc.logger})
			openMany(b, h, tc.others, func(i int) listen.Filter {
				return listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{uri("other", i)}}
			})
			req := request("bench")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				_, s, err := h.Open(ctx, req, filters[i%len(filters)])
				if err != nil {
					b.Fatal(err)
				}
				s.Close(listen.ErrComplete)
			}
		})
	}
}

// BenchmarkIdleListenerMemory reports the heap retained per idle hub
// listener (B/listener): runtime.ReadMemStats after a GC, before and after
// opening 100,000 listeners. The filters are built inside the measured
// window, since the hub keeps them. "hub" opens with Hub.Open only; the
// "listen.Open" variant adds the core's Subscription (no worker: the
// subscription's goroutines are excluded).
func BenchmarkIdleListenerMemory(b *testing.B) {
	const n = 100_000
	filters := []struct {
		name string
		f    func(i int) listen.Filter
	}{
		{"tools", func(int) listen.Filter {
			return listen.Filter{spec.KeyToolsListChanged: true}
		}},
		{"tools+uri", func(i int) listen.Filter {
			return listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{uri("m", i)}}
		}},
		{"tools+uri+taskIds", func(i int) listen.Filter {
			return listen.Filter{
				spec.KeyToolsListChanged:      true,
				spec.KeyResourceSubscriptions: []any{uri("m", i)},
				"taskIds":                     []any{fmt.Sprintf("task-%d", i)},
			}
		}},
	}
	for _, tc := range filters {
		b.Run("hub/"+tc.name, func(b *testing.B) {
			req := request("bench")
			var per float64
			for range b.N {
				h := newHub(b, hub.Options{})
				streams := make([]listen.Stream, n)
				before := heapAfterGC()
				for i := range n {
					_, s, err := h.Open(context.Background(), req, tc.f(i))
					if err != nil {
						b.Fatal(err)
					}
					streams[i] = s
				}
				per += float64(heapAfterGC()-before) / n
				runtime.KeepAlive(h)
				closeAll(streams)
			}
			b.ReportMetric(per/float64(b.N), "B/listener")
			b.ReportMetric(0, "ns/op")
		})
	}
	b.Run("listen.Open/tools+uri", func(b *testing.B) {
		opts := serverOptions(nil)
		var per float64
		for range b.N {
			h := newHub(b, hub.Options{})
			subs := make([]*listen.Subscription, n)
			reqs := make([]*listen.Request, n)
			for i := range reqs {
				reqs[i] = listenRequest("bench", nil, false)
			}
			before := heapAfterGC()
			for i := range n {
				reqs[i].Notifications = listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{uri("m", i)}}
				sub, err := listen.Open(context.Background(), h, reqs[i], opts)
				if err != nil {
					b.Fatal(err)
				}
				reqs[i] = nil // the request is the caller's, not the subscription's
				subs[i] = sub
			}
			per += float64(heapAfterGC()-before) / n
			for _, s := range subs {
				s.Close(listen.ErrComplete)
			}
		}
		b.ReportMetric(per/float64(b.N), "B/listener")
		b.ReportMetric(0, "ns/op")
	})
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
