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

// BenchmarkDebounceStarvation measures how long the go-sdk's debounce holds
// back list changes from a server that keeps changing: AddTool or
// RemoveTools every 3 ms for 1.5 s, and the time from the first change to
// the first tools/list_changed read by an HTTP listen (the go-sdk restarts
// its 10 ms timer on every change, with no maximum wait, so only a pause of
// 10 ms between two changes lets one out). first-ms is that time,
// max-gap-ms the longest time without a notification while the changes went
// on, during the number of notifications read meanwhile.
//
//	go test -run '^$' -bench DebounceStarvation -benchtime 1x -count 5 ./gosdk/
func BenchmarkDebounceStarvation(b *testing.B) {
	const (
		every = 3 * time.Millisecond
		span  = 1500 * time.Millisecond
	)
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	s, _ := openListen(b, ts.URL, 1, map[string]any{"toolsListChanged": true})
	var first, gap, during float64
	for range b.N {
		start := time.Now()
		ended := make(chan time.Time, 1)
		go func() { // ends after span, with the list as it was
			tick := time.NewTicker(every)
			defer tick.Stop()
			for n := 0; ; n++ {
				if n%2 == 0 {
					addTool(srv, "churn")
				} else {
					srv.RemoveTools("churn")
					if time.Since(start) >= span {
						ended <- time.Now()
						return
					}
				}
				<-tick.C
			}
		}()
		s.next()
		firstAt := time.Now()
		first = float64(firstAt.Sub(start).Microseconds()) / 1000
		gap = first
		end := <-ended
		during = 0
		if firstAt.Sub(end) < 10*time.Millisecond { // not the one after the last change
			during = 1
			last := firstAt
			for {
				s.next()
				now := time.Now()
				if now.Sub(end) >= 10*time.Millisecond { // the one after the last change: drained
					break
				}
				during++
				gap = max(gap, float64(now.Sub(last).Microseconds())/1000)
				last = now
			}
			gap = max(gap, float64(end.Sub(last).Microseconds())/1000)
		}
	}
	b.ReportMetric(first, "first-ms")
	b.ReportMetric(gap, "max-gap-ms")
	b.ReportMetric(during, "during")
	_ = h.Shutdown(context.Background())
	s.rest()
}
