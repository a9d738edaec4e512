package listen_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
)

// trivialSource opens streams whose Next blocks until Close (or returns the
// event in ev when set).
type trivialSource struct{ ev *listen.Event }

type trivialStream struct {
	ev     *listen.Event
	once   sync.Once
	closed chan struct{}
}

func (s trivialSource) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &trivialStream{ev: s.ev, closed: make(chan struct{})}, nil
}

func (s *trivialStream) Next() (listen.Event, error) {
	if s.ev != nil {
		return *s.ev, nil
	}
	<-s.closed
	return listen.Event{}, listen.ErrClosed
}

func (s *trivialStream) Close(error) { s.once.Do(func() { close(s.closed) }) }

// BenchmarkNotification measures shaping one core notification. AppendTo
// reuses the caller's buffer (as Serve does); Alloc returns a fresh slice.
func BenchmarkNotification(b *testing.B) {
	sub := openSub(b, trivialSource{}, jsonrpc.StringID("listen-1"), listen.Filter{"toolsListChanged": true, "resourceSubscriptions": []any{"file:///project/config.json"}})
	defer sub.Close(nil)
	events := []struct {
		name string
		ev   listen.Event
	}{
		{"tools", listen.ToolsListChanged()},
		{"resource", listen.ResourceUpdated("file:///project/config.json")},
		{"resourceWithMetadata", listen.ResourceUpdated("file:///project/config.json").WithMetadata(map[string]any{"com.example/seq": 1})},
	}
	for _, e := range events {
		b.Run(e.name+"/AppendTo", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var ok bool
				buf, ok, _ = sub.AppendNotification(buf[:0], e.ev)
				if !ok {
					b.Fatal("dropped")
				}
			}
		})
		b.Run(e.name+"/Alloc", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if msg, _ := sub.Notification(e.ev); msg == nil {
					b.Fatal("dropped")
				}
			}
		})
	}
}

// BenchmarkWorkerRoundTrip measures Continue → Next → outcome received.
func BenchmarkWorkerRoundTrip(b *testing.B) {
	ev := listen.ToolsListChanged()
	sub := openSub(b, trivialSource{ev: &ev}, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	w, err := sub.StartWorker(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Continue()
		if o := <-w.Outcomes(); o.Err != nil {
			b.Fatal(o)
		}
	}
	b.StopTimer()
	sub.Close(nil)
}

// BenchmarkOpenStartClose measures Open + StartWorker + Close with a trivial
// source.
func BenchmarkOpenStartClose(b *testing.B) {
	ctx := context.Background()
	opts := &listen.Options{Capabilities: allCaps}
	req := request(jsonrpc.StringID("listen-1"), listen.Filter{"toolsListChanged": true, "resourceSubscriptions": []any{"file:///a"}})
	b.ReportAllocs()
	for b.Loop() {
		sub, err := listen.Open(ctx, trivialSource{}, req, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sub.StartWorker(ctx); err != nil {
			b.Fatal(err)
		}
		sub.Close(listen.ErrComplete)
	}
}

// BenchmarkSubscriptionMemory reports the memory of one open subscription
// with a started worker (heap plus goroutine stacks), measured over 10,000
// subscriptions whose owner is a cancellable context.
func BenchmarkSubscriptionMemory(b *testing.B) {
	const n = 10_000
	opts := &listen.Options{Capabilities: allCaps}
	req := request(jsonrpc.StringID("listen-1"), listen.Filter{"toolsListChanged": true})
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		subs := make([]*listen.Subscription, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for i := range subs {
			sub, err := listen.Open(ctx, trivialSource{}, req, opts)
			if err != nil {
				b.Fatal(err)
			}
			w, err := sub.StartWorker(ctx)
			if err != nil {
				b.Fatal(err)
			}
			w.Continue() // a Next parked in the source, as on a live stream
			subs[i] = sub
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSub := float64((after.HeapInuse+after.StackInuse)-(before.HeapInuse+before.StackInuse)) / n
		b.ReportMetric(perSub, "B/sub")
		for _, s := range subs {
			s.Close(listen.ErrComplete)
		}
		cancel()
		b.StartTimer()
	}
}

// BenchmarkParseRequest measures parsing a listen request as a transport
// does (the envelope, then the params), for a tools listen and one of 100
// URIs. Run: go test . -run '^$' -bench ParseRequest -benchmem -count 5
func BenchmarkParseRequest(b *testing.B) {
	uris := make([]string, 100)
	for i := range uris {
		uris[i] = fmt.Sprintf(`"file:///project/src/file%03d.go"`, i)
	}
	for _, tc := range []struct{ name, filter string }{
		{"tools", `{"toolsListChanged":true}`},
		{"uris=100", `{"resourceSubscriptions":[` + strings.Join(uris, ",") + `]}`},
	} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":` + tc.filter +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}}}`)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := listen.ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListenURIs measures the core's work for one listen naming 1,000
// URIs of 120 bytes, as a transport does it: parse the request
// (ParseRequest), open it on a hub (Open), shape the acknowledgement, and
// close it. Run: go test . -run '^$' -bench ListenURIs -benchmem -count 5
func BenchmarkListenURIs(b *testing.B) {
	const n = 1000
	uris := make([]string, n)
	for i := range uris {
		u := fmt.Sprintf("file:///project/l0/u%d/", i)
		uris[i] = `"` + u + strings.Repeat("x", 120-len(u)) + `"`
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` +
		strings.Join(uris, ",") + `]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}}}`)
	h, err := hub.New(hub.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = h.Shutdown(context.Background()) }()
	opts := &listen.Options{Capabilities: allCaps}
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := listen.ParseRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		sub, err := listen.Open(ctx, h, req, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sub.Acknowledgement(); err != nil {
			b.Fatal(err)
		}
		sub.Close(listen.ErrComplete)
	}
}

// wrappedSource wraps every stream of src with WrapStream (as otel's Source
// does).
type wrappedSource struct{ src listen.Source }

func (w wrappedSource) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	accepted, st, err := w.src.Open(ctx, req, supported)
	return accepted, listen.WrapStream(st, listen.StreamHooks{Pull: func() {}}), err
}

// BenchmarkServe measures one notification through Serve on a hub stream:
// the hub publishes, Serve's state machine pulls the event (without a
// worker: a hub stream is a NotifyStream), shapes it and writes it to the
// sink; one op ends when the sink has it. "wrapped": the hub's streams
// are wrapped with WrapStream, whose wrapper keeps them validated once per
// publication. "metadata": the event carries five metadata entries.
func BenchmarkServe(b *testing.B) {
	meta := map[string]any{"a": 1, "b": "x", "c": true, "d": []any{1, 2}, "e": map[string]any{"f": 1}}
	for _, c := range []struct {
		name string
		wrap bool
		ev   listen.Event
	}{
		{"tools", false, listen.ToolsListChanged()},
		{"tools/wrapped", true, listen.ToolsListChanged()},
		{"metadata", false, listen.ToolsListChanged().WithMetadata(meta)},
		{"metadata/wrapped", true, listen.ToolsListChanged().WithMetadata(meta)},
	} {
		b.Run(c.name, func(b *testing.B) {
			h, err := hub.New(hub.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var src listen.Source = h
			if c.wrap {
				src = wrappedSource{h}
			}
			sub := openSub(b, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
			got := make(chan struct{}, 1)
			done := make(chan error, 1)
			go func() {
				done <- sub.Serve(context.Background(), listen.Sink{Write: func([]byte) error { got <- struct{}{}; return nil }})
			}()
			<-got // the acknowledgement
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Publish(c.ev); err != nil {
					b.Fatal(err)
				}
				<-got
			}
			b.StopTimer()
			sub.Close(nil)
			<-done
			if err := h.Shutdown(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}
