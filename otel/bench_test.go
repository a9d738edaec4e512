package otel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/spec"
)

// The overhead of the instruments, with an SDK provider (a manual reader,
// so nothing is exported during the run) against none. The figures are in
// the package documentation.
//
// Run: go test ./otel/ -run '^$' -bench . -benchmem -count 5

// instrumented returns how a hub and its source are built in each variant:
// "none" (no provider: the hub has no hooks, the source is the hub),
// "nop-hooks" (hooks that do nothing: the hook calls and the clock read of
// PublishInfo.Duration, without OpenTelemetry), "otel" (an SDK provider).
func instrumented(b *testing.B, variant string) (hub.Options, func(listen.Source) listen.Source) {
	b.Helper()
	switch variant {
	case "none":
		m, err := listenotel.New(listenotel.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return withMetrics(m, hub.Options{}), m.Source
	case "nop-hooks":
		return hub.Options{OnPublish: func(hub.PublishInfo) {}}, func(s listen.Source) listen.Source { return s }
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	return withMetrics(m, hub.Options{}), m.Source
}

var variants = []string{"none", "nop-hooks", "otel"}

// BenchmarkHubPublish publishes one tools list change to 1 or 100
// listeners, whose queues are drained after each publication (in the timed
// loop, the same in every variant).
func BenchmarkHubPublish(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("listeners=%d/%s", n, v), func(b *testing.B) {
				hopts, _ := instrumented(b, v)
				h, err := hub.New(hopts)
				if err != nil {
					b.Fatal(err)
				}
				streams := make([]listen.NotifyStream, n)
				for i := range streams {
					_, s, err := h.Open(context.Background(), nil, listen.Filter{spec.KeyToolsListChanged: true})
					if err != nil {
						b.Fatal(err)
					}
					streams[i] = s.(listen.NotifyStream)
					defer s.Close(nil)
				}
				ev := listen.ToolsListChanged()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.Publish(ev); err != nil {
						b.Fatal(err)
					}
					for _, s := range streams {
						if _, ok, err := s.TryNext(); !ok || err != nil {
							b.Fatal(ok, err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkDelivered measures one notification from Publish to the end of
// its write on a subscription served by listen.Subscription.Serve (on its
// own goroutine, as a transport runs it), through a hub. Publications go
// in batches of 64 (below MaxBuffer: nothing is dropped); each batch waits
// until the sink wrote its last notification. ns/op is per notification.
func BenchmarkDelivered(b *testing.B) {
	const batch = 64
	for _, v := range variants {
		b.Run(v, func(b *testing.B) {
			hopts, wrap := instrumented(b, v)
			hopts.MaxBuffer = 2 * batch
			h, err := hub.New(hopts)
			if err != nil {
				b.Fatal(err)
			}
			req, err := listen.ParseRequest([]byte(listenBody(`1`, `{"toolsListChanged":true}`)))
			if err != nil {
				b.Fatal(err)
			}
			req.Transport.Kind = "bench"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sub, err := listen.Open(ctx, wrap(h), req, &listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
			if err != nil {
				b.Fatal(err)
			}
			// The sink signals when it wrote the target-th message; the
			// target is always set before the publications that reach it.
			var written, target atomic.Int64
			reached := make(chan struct{}, 1)
			served := make(chan struct{})
			target.Store(1) // the acknowledgement
			go func() {
				defer close(served)
				sub.Serve(ctx, listen.Sink{Write: func([]byte) error {
					if written.Add(1) == target.Load() {
						reached <- struct{}{}
					}
					return nil
				}})
			}()
			<-reached
			ev := listen.ToolsListChanged()
			sent := int64(1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				k := min(batch, b.N-i)
				target.Store(sent + int64(k))
				for range k {
					if _, err := h.Publish(ev); err != nil {
						b.Fatal(err)
					}
				}
				<-reached
				sent += int64(k)
			}
			b.StopTimer()
			cancel()
			<-served
		})
	}
}

// BenchmarkRecord measures the recording calls alone, on one goroutine:
// what a hook adds to its caller with an SDK provider, free of the hub's
// and the scheduler's noise.
func BenchmarkRecord(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hub.OnPublish", func(b *testing.B) {
		onPublish := withMetrics(m, hub.Options{}).OnPublish
		info := hub.PublishInfo{Report: hub.Report{Matched: 1, Delivered: 1}, EventKind: listen.KindToolsListChanged}
		b.ReportAllocs()
		for b.Loop() {
			onPublish(info)
		}
	})
	b.Run("Transport.OnOpen+OnClose", func(b *testing.B) {
		t := m.Transport("bench")
		b.ReportAllocs()
		for b.Loop() {
			t.OnOpen(nil)
			t.OnClose(nil, listen.ErrComplete)
		}
	})
}
