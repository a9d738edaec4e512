package natsbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// benchPair is instance A (a hub and a bridge) and instance B (a hub, a
// bridge and a streamhttp handler on a loopback HTTP server holding one
// real listen stream), joined by an embedded NATS server. Each instance has
// its own NATS connection.
type benchPair struct {
	a *natsbridge.Bridge
	// arrivals receives the time each notification's SSE data line was read
	// by B's HTTP client.
	arrivals chan time.Time
	drops    chan cluster.DropInfo
}

func newBenchPair(b *testing.B, opts natsbridge.Options) *benchPair {
	b.Helper()
	ns := startNATS(b, 0)
	ha, err := hub.New(hub.Options{})
	require.NoError(b, err)
	a, err := natsbridge.New(connect(b, ns.ClientURL()), ha, opts)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, a.Close()) })

	hbB, err := hub.New(hub.Options{MaxBuffer: 1 << 22}) // never drop: the benchmark counts arrivals
	require.NoError(b, err)
	optsB := opts
	var hooks cluster.Options
	rec := record(&hooks)
	optsB.OnDrop = hooks.OnDrop // drops only
	bb, err := natsbridge.New(connect(b, ns.ClientURL()), hbB, optsB)
	require.NoError(b, err)
	h, err := streamhttp.New(listen.NewServer(hbB, listen.Options{Capabilities: caps()}), streamhttp.Options{
		KeepAlive: failsafe,
		// none during the benchmark,
	})
	require.NoError(b, err)
	srv := &http.Server{Handler: h}
	ts := newLoopbackServer(b, srv)
	client := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
		client.CloseIdleConnections()
		require.NoError(b, bb.Close())
	})

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts, strings.NewReader(listenBody("bench", `{"toolsListChanged":true}`)))
	require.NoError(b, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	resp, err := client.Do(req)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode)
	p := &benchPair{a: a, arrivals: make(chan time.Time, 1<<22), drops: rec.Drops}
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	done := make(chan struct{})
	go func() { // B's HTTP listen client
		defer close(done)
		first := true
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				return
			}
			if bytes.HasPrefix(line, []byte("data: ")) {
				if first { // the acknowledgement
					first = false
					continue
				}
				p.arrivals <- time.Now()
			}
		}
	}()
	b.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return p
}

// arrival waits for the next arrival on B's stream.
func (p *benchPair) arrival(b *testing.B) time.Time {
	select {
	case at := <-p.arrivals:
		return at
	case d := <-p.drops:
		b.Fatalf("B dropped messages: %+v", d)
	case <-time.After(failsafe):
		b.Fatal("timed out waiting for an event on B's listen stream")
	}
	return time.Time{}
}

// benchModes are the bridge configurations the cross-instance benchmarks
// compare: no authentication, and envelope authentication with one key.
var benchModes = []struct {
	name string
	opts natsbridge.Options
}{
	{"plain", natsbridge.Options{}},
	{"auth", natsbridge.Options{Options: cluster.Options{AuthKeys: [][]byte{keyOld}}}},
}

// BenchmarkCrossInstanceLatency measures, one event at a time, the time
// from Publish on instance A to the arrival of the notification on the
// listen stream B's HTTP client holds.
func BenchmarkCrossInstanceLatency(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchLatency(b, m.opts) })
	}
}

func benchLatency(b *testing.B, opts natsbridge.Options) {
	p := newBenchPair(b, opts)
	// Warm up the connections and the stream.
	for range 100 {
		_, err := p.a.Hub().Publish(listen.ToolsListChanged())
		require.NoError(b, err)
		p.arrival(b)
	}
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := p.a.Hub().Publish(listen.ToolsListChanged()); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, p.arrival(b).Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// window is the most events in flight (published on A, not yet read on
// B's stream) in the throughput benchmark: enough to keep every stage
// busy, few enough that no queue grows without bound.
const window = 1024

// BenchmarkCrossInstanceThroughput publishes b.N events on A, keeping at
// most window of them in flight, and waits until all reached B's listen
// stream: the sustained events per second from A's Publish, through NATS,
// B's bridge and hub, to B's HTTP client.
func BenchmarkCrossInstanceThroughput(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchThroughput(b, m.opts) })
	}
}

func benchThroughput(b *testing.B, opts natsbridge.Options) {
	p := newBenchPair(b, opts)
	for range 100 {
		_, err := p.a.Hub().Publish(listen.ToolsListChanged())
		require.NoError(b, err)
		p.arrival(b)
	}
	b.ReportAllocs()
	start := time.Now()
	cpu0, cpuOK := processCPU()
	sent, arrived := 0, 0
	var last time.Time
	for b.Loop() {
		if sent-arrived >= window {
			last = p.arrival(b)
			arrived++
		}
		if _, err := p.a.Hub().Publish(listen.ToolsListChanged()); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	for arrived < sent {
		last = p.arrival(b)
		arrived++
	}
	b.StopTimer()
	b.ReportMetric(float64(sent)/last.Sub(start).Seconds(), "events/s")
	reportCPU(b, cpu0, cpuOK, sent)
}

// reportCPU reports the process's CPU time per event since cpu0: on a
// shared machine it varies much less than the elapsed time, which counts
// the time other programs held the cores.
func reportCPU(b *testing.B, cpu0 time.Duration, ok bool, events int) {
	cpu1, ok1 := processCPU()
	if ok && ok1 && events > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/float64(events), "cpu-µs/event")
	}
}

// BenchmarkPublish is Publish's cost on the publishing instance, without
// and with signing: encoding, the local hub (no listeners), numbering,
// the signature and nats.go's buffered write. The bridge also receives its
// own messages back from the server and discards them (with
// authentication, after checking their signature), on the same two cores.
func BenchmarkPublish(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			ns := startNATS(b, 0)
			h, err := hub.New(hub.Options{})
			require.NoError(b, err)
			br, err := natsbridge.New(connect(b, ns.ClientURL()), h, m.opts)
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, br.Close()) })
			ev := listen.ResourceUpdated("file:///project/src/main.go").
				WithMetadata(map[string]any{"com.example/rev": 42, "com.example/by": "alice@example.com"})
			b.ReportAllocs()
			cpu0, cpuOK := processCPU()
			n := 0
			for b.Loop() {
				if _, err := br.Hub().Publish(ev); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.StopTimer()
			reportCPU(b, cpu0, cpuOK, n)
			if st := br.Stats(); st.PublishErrors != 0 {
				b.Fatalf("publish errors: %+v", st)
			}
		})
	}
}
