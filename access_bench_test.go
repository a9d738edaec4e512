package listen_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// BenchmarkDeliverResourceUpdate shapes one resource update for a
// subscription watching 100 URIs (the work a stream does per delivered
// event), without a delivery check, with Access.Deliver and its cache
// (the steady state: one map lookup), and with the cached verdicts made
// stale before every event (each delivery asks CanRead, as the first one
// after each re-check does).
// CanRead itself is a map lookup, so the figures are the mechanism's.
//
// Run: go test . -run '^$' -bench DeliverResourceUpdate -benchmem -count 10
func BenchmarkDeliverResourceUpdate(b *testing.B) {
	uris := make([]any, 100)
	readable := map[string]bool{}
	for i := range uris {
		u := fmt.Sprintf("file:///project/src/file-%03d.go", i)
		uris[i] = u
		readable[u] = true
	}
	canRead := func(_ context.Context, _ *listen.Request, uri string) bool { return readable[uri] }
	for _, mode := range []string{"no-check", "check-cached", "check-every-event"} {
		b.Run(mode, func(b *testing.B) {
			access := &listen.Access{Deliver: mode != "no-check"}
			opts := &listen.Options{Capabilities: allCaps, CanRead: canRead}
			if mode != "no-check" {
				opts.Access = access
			}
			req := request(jsonrpc.StringID("bench"), listen.Filter{"resourceSubscriptions": uris})
			req.Auth = "user"
			sub, err := listen.Open(context.Background(), newTestSource(), req, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close(nil)
			events := make([]listen.Event, len(uris))
			for i, u := range uris {
				events[i] = listen.ResourceUpdated(u.(string))
			}
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if mode == "check-every-event" {
					listen.StaleReads(sub) // as after a re-check: CanRead is asked again
				}
				out, ok, err := sub.AppendNotification(buf[:0], events[i%len(events)])
				if !ok || err != nil {
					b.Fatal("not delivered", err)
				}
				buf = out
			}
		})
	}
}

// BenchmarkRecheckRound is one re-check round (Access.Recheck of all)
// over 10,000 open subscriptions, each its own principal watching one URI:
// one Check and one CanRead call each, on the round's goroutines: with the
// defaults (MaxChecks 16, CheckTimeout 30 s), without CheckTimeout, and on
// one goroutine (MaxChecks 1); cpu-ns/principal is the CPU time of the
// whole process (where the system reports it), wall ns/principal the
// round's. docs/performance.md gives the same over real idle streams, as
// server CPU per second.
//
// Run: go test . -run '^$' -bench RecheckRound -benchmem -count 10
func BenchmarkRecheckRound(b *testing.B) {
	const n = 10_000
	for _, bc := range []struct {
		name    string
		max     int
		timeout time.Duration
	}{{"default", 0, 0}, {"no-timeout", 0, -1}, {"one-goroutine", 1, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			access := &listen.Access{
				Check:     func(context.Context, any) error { return nil },
				MaxChecks: bc.max, CheckTimeout: bc.timeout,
			}
			defer access.Close()
			opts := &listen.Options{
				Capabilities: allCaps, Access: access,
				CanRead: func(context.Context, *listen.Request, string) bool { return true },
			}
			src := newTestSource()
			for i := range n {
				req := request(jsonrpc.IntID(int64(i)), listen.Filter{"resourceSubscriptions": []any{fmt.Sprintf("file:///r/%d", i)}})
				req.Auth = i
				sub, err := listen.Open(context.Background(), src, req, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer sub.Close(nil)
			}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if ended := access.Recheck(context.Background(), nil); ended != 0 {
					b.Fatal(ended)
				}
			}
			cpu = processCPU() - cpu
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/principal")
			if cpu > 0 { // the process's CPU time: all the round's goroutines
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/n, "cpu-ns/principal")
			}
		})
	}
}
