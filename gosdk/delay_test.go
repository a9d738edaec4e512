package gosdk_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcplisten/listen/gosdk"
)

// BenchmarkChangeToNotification measures the delay from a change
// (Handler.ResourceUpdated; the go-sdk's AddTool/RemoveTools) to the
// listen's notification
// read by an HTTP client on loopback: one change per iteration, reported as
// the median, 10th and 90th percentile and maximum over the iterations.
//
//	go test -run '^$' -bench ChangeToNotification -benchtime 100x -count 5 ./gosdk/
func BenchmarkChangeToNotification(b *testing.B) {
	for _, kind := range []string{"ResourceUpdated", "AddTool"} {
		b.Run(kind, func(b *testing.B) {
			srv := plainServer()
			h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			filter := map[string]any{"resourceSubscriptions": []any{uriA}}
			if kind == "AddTool" {
				filter = map[string]any{"toolsListChanged": true}
			}
			s, _ := openListen(b, ts.URL, 1, filter)
			ctx := context.Background()
			delays := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if kind == "AddTool" {
					if i%2 == 0 {
						addTool(srv, "x"+strconv.Itoa(i))
					} else {
						srv.RemoveTools("x" + strconv.Itoa(i-1))
					}
				} else if err := h.ResourceUpdated(ctx, uriA); err != nil {
					b.Fatal(err)
				}
				s.next()
				delays = append(delays, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(delays)
			q := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.1), "p10-µs")
			b.ReportMetric(q(0.9), "p90-µs")
			b.ReportMetric(q(1), "max-µs")
			_ = h.Shutdown(ctx)
			s.rest()
		})
	}
}
