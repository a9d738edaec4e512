package listen_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// serve opens sl for req and serves its stream on a goroutine until it
// ends, then calls Done; the returned channel gets the terminal message.
func serve(t *testing.T, sl *listen.Slot, req *listen.Request) <-chan []byte {
	t.Helper()
	sub, err := sl.Open(context.Background(), context.Background(), req)
	require.NoError(t, err)
	final := make(chan []byte, 1)
	go func() {
		var last []byte
		reason := sub.Serve(context.Background(), listen.Sink{Write: func(msg []byte) error {
			last = bytes.Clone(msg)
			return nil
		}})
		sl.Done(reason)
		final <- last
	}()
	return final
}

// refusal checks that err is the *jsonrpc.Error (code, message) that
// matches cause (streamhttp's tests check the HTTP status a transport
// answers it with).
func refusal(t *testing.T, err error, code int, msg string, cause error) {
	t.Helper()
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, code, we.Code)
	assert.Equal(t, msg, we.Message)
	if cause != nil {
		assert.ErrorIs(t, err, cause)
	}
}

// Admit refuses in its documented order, with the exact errors, reports
// every refusal to OnRefuse and counts the capacity ones.
func TestServerAdmit(t *testing.T) {
	var refused []error
	src := newTestSource()
	srv := listen.NewServer(src, listen.Options{
		Capabilities: allCaps, MaxStreams: 3, MaxStreamsPerKey: 2, RetryAfter: 1500 * time.Millisecond,
		StreamKey: func(req *listen.Request) string { return req.Auth.(string) },
		OnRefuse:  func(_ *listen.Request, err error) { refused = append(refused, err) },
	})
	as := func(user string) *listen.Request {
		req := request(jsonrpc.StringID(user), listen.Filter{})
		req.Auth = user
		return req
	}
	var slots []*listen.Slot
	for _, user := range []string{"ann", "ann", "bob"} {
		sl, err := admit(srv, as(user))
		require.NoError(t, err)
		slots = append(slots, sl)
	}
	_, err := admit(srv, as("ann"))
	refusal(t, err, jsonrpc.CodeInternalError, core.TooManyForKey, listen.ErrOverQuota)
	_, err = admit(srv, as("cid"))
	refusal(t, err, jsonrpc.CodeInternalError, core.CapacityExhausted, listen.ErrOverloaded)

	old := as("dan")
	old.ProtocolVersion = "2025-11-25"
	_, err = admit(srv, old)
	refusal(t, err, jsonrpc.CodeMethodNotFound, "Method not found: subscriptions/listen", nil)
	expired := as("eve")
	expired.Expiry = time.Now().Add(-time.Second)
	_, err = admit(srv, expired)
	refusal(t, err, jsonrpc.CodeInvalidRequest, "Unauthorized", listen.ErrExpired)

	assert.Equal(t, listen.Stats{Active: 3, Refused: 2}, srv.Stats())
	slots[0].Done(nil)
	slots[0].Done(nil) // a second Done does nothing
	sl, err := admit(srv, as("ann"))
	require.NoError(t, err, "a freed slot is free for its key again")
	for _, sl := range append(slots[1:], sl) {
		sl.Done(nil)
	}
	assert.Equal(t, listen.Stats{Refused: 2}, srv.Stats())
	assert.Len(t, refused, 4, "every refusal reported")
}

// The default MaxStreamsPerKey key is the host of the request's remote
// address: the client's IP address over HTTP.
func TestServerDefaultKey(t *testing.T) {
	srv := listen.NewServer(newTestSource(), listen.Options{Capabilities: allCaps, MaxStreamsPerKey: 1})
	from := func(addr string) *listen.Request {
		req := request(jsonrpc.IntID(1), listen.Filter{})
		req.Transport.RemoteAddr = addr
		return req
	}
	for _, tt := range []struct{ first, second string }{
		{"192.0.2.7:5555", "192.0.2.7:6666"},
		{"[2001:db8::1]:443", "[2001:db8::1]:80"},
		{"pipe", "pipe"},
	} {
		sl, err := admit(srv, from(tt.first))
		require.NoError(t, err)
		_, err = admit(srv, from(tt.second))
		assert.ErrorIs(t, err, listen.ErrOverQuota, "%s and %s share a key", tt.first, tt.second)
		sl.Done(nil)
	}
}

// By default one client holds at most a quarter of MaxStreams, so that it
// cannot take every slot; the others are still admitted. Listens with no
// remote address and no StreamKey (stdio's) have no client to tell apart:
// only MaxStreams bounds them. A negative MaxStreamsPerKey lifts the bound.
func TestServerDefaultPerClientBound(t *testing.T) {
	from := func(id int64, addr string) *listen.Request {
		req := request(jsonrpc.IntID(id), listen.Filter{})
		req.Transport.RemoteAddr = addr
		return req
	}
	byAddr := func(req *listen.Request) string { return "key " + req.Transport.RemoteAddr }
	for _, tt := range []struct {
		name     string
		opts     listen.Options
		addr     string
		perKey   int // the resolved bound
		admitted int // of 10 listens from addr
	}{
		{"default", listen.Options{Capabilities: allCaps}, "192.0.2.7:5555", 256, 10},
		{"MaxStreams 8", listen.Options{Capabilities: allCaps, MaxStreams: 8}, "192.0.2.7:5555", 2, 2},
		{"MaxStreams 3", listen.Options{Capabilities: allCaps, MaxStreams: 3}, "192.0.2.7:5555", 1, 1},
		{"no address", listen.Options{Capabilities: allCaps, MaxStreams: 8}, "", 2, 8},
		{"no address, a StreamKey", listen.Options{Capabilities: allCaps, MaxStreams: 8, StreamKey: byAddr}, "", 2, 2},
		{"no address, set", listen.Options{Capabilities: allCaps, MaxStreams: 8, MaxStreamsPerKey: 2}, "", 2, 2},
		{"no bound", listen.Options{Capabilities: allCaps, MaxStreams: 8, MaxStreamsPerKey: -1}, "192.0.2.7:5555", -1, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := listen.NewServer(newTestSource(), tt.opts)
			assert.Equal(t, tt.perKey, srv.Options().MaxStreamsPerKey)
			refusal := listen.ErrOverQuota // the bound per key
			if tt.admitted == tt.opts.MaxStreams {
				refusal = listen.ErrOverloaded // MaxStreams
			}
			var slots []*listen.Slot
			for i := range 10 {
				sl, err := admit(srv, from(int64(i), tt.addr))
				if err == nil {
					slots = append(slots, sl)
				} else {
					assert.ErrorIs(t, err, refusal)
				}
			}
			assert.Len(t, slots, tt.admitted)
			if tt.admitted < 8 {
				other, err := admit(srv, from(99, "198.51.100.1:5555"))
				require.NoError(t, err, "another client is still admitted")
				other.Done(nil)
			}
			for _, sl := range slots {
				sl.Done(nil)
			}
		})
	}
}

type quotaFunc func(ctx context.Context, req *listen.Request) (func(), error)

func (f quotaFunc) Acquire(ctx context.Context, req *listen.Request) (func(), error) {
	return f(ctx, req)
}

// A Quota admits after the Server's own limits; its release runs once,
// when the slot is Done; its refusal is sent as it is (429 for
// ErrOverQuota); a panicking Quota refuses with -32603 and frees the slot.
func TestServerQuota(t *testing.T) {
	var mu sync.Mutex
	held := map[string]int{}
	overQuota := jsonrpc.NewError(jsonrpc.CodeInternalError, "Subscription quota exceeded for this tenant").WithCause(listen.ErrOverQuota)
	var logs bytes.Buffer
	srv := listen.NewServer(newTestSource(), listen.Options{
		Capabilities: allCaps,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
		Quota: quotaFunc(func(_ context.Context, req *listen.Request) (func(), error) {
			tenant := req.Auth.(string)
			if tenant == "panic" {
				panic("broken quota")
			}
			mu.Lock()
			defer mu.Unlock()
			if held[tenant] >= 1 {
				return nil, overQuota
			}
			held[tenant]++
			return func() { mu.Lock(); held[tenant]--; mu.Unlock() }, nil
		}),
	})
	as := func(tenant string) *listen.Request {
		req := request(jsonrpc.IntID(1), listen.Filter{})
		req.Auth = tenant
		return req
	}
	sl, err := admit(srv, as("acme"))
	require.NoError(t, err)
	_, err = admit(srv, as("acme"))
	refusal(t, err, jsonrpc.CodeInternalError, "Subscription quota exceeded for this tenant", listen.ErrOverQuota)
	_, err = admit(srv, as("panic"))
	refusal(t, err, jsonrpc.CodeInternalError, "Internal error", nil)
	assert.Contains(t, logs.String(), "broken quota")
	assert.Equal(t, listen.Stats{Active: 1, Refused: 2}, srv.Stats(), "refused slots are freed")
	sl.Done(nil)
	sl.Done(nil)
	mu.Lock()
	assert.Equal(t, map[string]int{"acme": 0}, held, "released once")
	mu.Unlock()
}

// A panic in a hook is recovered and logged on every path; the listen goes
// on.
func TestServerHookPanics(t *testing.T) {
	var logs bytes.Buffer
	src := newTestSource()
	srv := listen.NewServer(src, listen.Options{
		Capabilities:     allCaps,
		Logger:           slog.New(slog.NewTextHandler(&logs, nil)),
		MaxStreamsPerKey: 5,
		StreamKey:        func(*listen.Request) string { panic("key") },
		OnOpen:           func(*listen.Subscription) { panic("open") },
		OnClose:          func(*listen.Subscription, error) { panic("close") },
		OnRefuse:         func(*listen.Request, error) { panic("refuse") },
	})
	sl, err := admit(srv, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}))
	require.NoError(t, err)
	final := serve(t, sl, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}))
	src.last().complete()
	assert.Equal(t, "complete", decode(t, <-final)["result"].(map[string]any)["resultType"])
	old := request(jsonrpc.IntID(2), listen.Filter{})
	old.ProtocolVersion = "1999-01-01"
	_, err = admit(srv, old)
	require.Error(t, err)
	for _, hook := range []string{"StreamKey", "OnOpen", "OnClose", "OnRefuse"} {
		assert.Contains(t, logs.String(), `msg="listen: `+hook+` panicked"`)
	}
	assert.Equal(t, listen.Stats{Opened: 1, Closed: 1}, srv.Stats())
}

// A listen EndStreams selects while its request is still being read (Begin,
// not yet admitted) is opened, then ended at once: it gets its
// acknowledgement and its ending. Others are untouched, and a second
// EndStreams finds nothing more to end.
func TestServerEndStreamsBeforeOpen(t *testing.T) {
	src := newTestSource()
	srv := listen.NewServer(src, listen.Options{Capabilities: allCaps})
	early := srv.Begin("ann")
	open, err := admit(srv, func() *listen.Request {
		r := request(jsonrpc.IntID(2), listen.Filter{})
		r.Auth = "ann"
		return r
	}())
	require.NoError(t, err)
	openFinal := serve(t, open, request(jsonrpc.IntID(2), listen.Filter{}))
	bob, err := admit(srv, request(jsonrpc.IntID(3), listen.Filter{}))
	require.NoError(t, err)
	bobFinal := serve(t, bob, request(jsonrpc.IntID(3), listen.Filter{}))

	assert.Equal(t, 2, srv.EndStreams(func(auth any) bool { return auth == "ann" }, listen.ErrRevoked))
	assert.Zero(t, srv.EndStreams(func(auth any) bool { return auth == "ann" }, listen.ErrRevoked))
	req := request(jsonrpc.IntID(1), listen.Filter{})
	req.Auth = "ann"
	require.NoError(t, early.Admit(context.Background(), req))
	earlyFinal := serve(t, early, req)
	for _, final := range []<-chan []byte{openFinal, earlyFinal} {
		meta := decode(t, <-final)["result"].(map[string]any)["_meta"].(map[string]any)
		assert.Equal(t, "revoked", meta[spec.MetaEndReason])
	}
	select {
	case <-bobFinal:
		t.Fatal("another principal's stream ended")
	default:
	}
	src.streams[1].complete()
	<-bobFinal
	st := srv.Stats()
	assert.Equal(t, uint64(2), st.Revoked)
	assert.Equal(t, uint64(3), st.Closed)
}

// Shutdown with a DrainWindow ends the streams one by one, spread evenly
// over the window: within any window/10 at most a tenth of them (+1) end,
// every one ends before the window is over, and no listen is admitted once
// it started. With RetryHint each completion carries a hint in
// [0, RetryAfter].
func TestServerPacedDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		const window = 20 * time.Second
		src := newTestSource()
		srv := listen.NewServer(src, listen.Options{Capabilities: allCaps, DrainWindow: window, RetryHint: true, RetryAfter: 3 * time.Second})
		type end struct {
			at  time.Duration
			msg []byte
		}
		ends := make(chan end, n)
		start := time.Now()
		for i := range n {
			req := request(jsonrpc.IntID(int64(i)), listen.Filter{})
			sl, err := admit(srv, req)
			require.NoError(t, err)
			final := serve(t, sl, req)
			go func() {
				msg := <-final
				ends <- end{time.Since(start), msg}
			}()
		}
		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(context.Background()) }()
		synctest.Wait()
		_, err := admit(srv, request(jsonrpc.IntID(-1), listen.Filter{}))
		assert.ErrorIs(t, err, listen.ErrShutdown, "no listen is admitted once the drain started")
		assert.True(t, srv.Stats().Draining)
		require.NoError(t, <-done)

		buckets := make([]int, 10)
		for range n {
			e := <-ends
			require.Less(t, e.at, window, "ended before the window is over")
			buckets[e.at/(window/10)]++
			meta := decode(t, e.msg)["result"].(map[string]any)["_meta"].(map[string]any)
			hint := meta[spec.MetaRetryAfterMs].(float64)
			assert.True(t, hint >= 0 && hint <= 3000, "retry hint %v", hint)
			assert.NotContains(t, meta, spec.MetaEndReason)
		}
		for i, c := range buckets {
			assert.LessOrEqual(t, c, n/10+1, "ends in tenth %d of the window", i)
		}
		assert.Equal(t, listen.Stats{Opened: n, Closed: n, Refused: 1, Draining: true}, srv.Stats())
	})
}

// A ctx deadline shorter than the DrainWindow shortens the drain: every
// stream still ends before the deadline.
func TestServerDrainWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		srv := listen.NewServer(src, listen.Options{Capabilities: allCaps, DrainWindow: time.Minute})
		var finals []<-chan []byte
		for i := range 10 {
			req := request(jsonrpc.IntID(int64(i)), listen.Filter{})
			sl, err := admit(srv, req)
			require.NoError(t, err)
			finals = append(finals, serve(t, sl, req))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, srv.Shutdown(ctx))
		assert.Less(t, time.Since(start), 10*time.Second)
		for _, f := range finals {
			assert.Equal(t, "complete", decode(t, <-f)["result"].(map[string]any)["resultType"])
		}
	})
}

// Shutdown returns ctx's error when streams outlive it, and ends the rest
// at once; a later Shutdown, once the slot is done, returns nil.
func TestServerShutdownContext(t *testing.T) {
	src := newTestSource()
	srv := listen.NewServer(src, listen.Options{Capabilities: allCaps, DrainWindow: time.Hour})
	req := request(jsonrpc.IntID(1), listen.Filter{})
	sl, err := admit(srv, req)
	require.NoError(t, err)
	sub, err := sl.Open(context.Background(), context.Background(), req)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, srv.Shutdown(ctx), context.Canceled)
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	o := <-w.Outcomes()
	assert.ErrorIs(t, o.Err, listen.ErrShutdown, "the stream was ended")
	sub.Close(listen.ErrShutdown)
	sl.Done(listen.ErrShutdown)
	assert.NoError(t, srv.Shutdown(context.Background()))
}
