package streamhttp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// Shutdown sends every open stream its completion result, closes it with
// ErrShutdown, refuses new listens with 503 and returns once all streams
// ended, OnClose included, on every path.
func TestShutdown(t *testing.T) {
	for _, p := range servingPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t, nil, &config{NoTakeover: p.noTakeover}, envConfig{http2: p.http2})
			a := e.listen(t, `"a"`, `{"toolsListChanged":true}`)
			b := e.listen(t, `7`, `{"promptsListChanged":true}`)
			a.message(t)
			b.message(t)
			sa, sb := streamOf(t, e.src, "a"), streamOf(t, e.src, "7")
			pulled(t, sa)
			pulled(t, sb)

			require.NoError(t, e.h.Shutdown(context.Background()))
			for range 2 {
				c := recv(t, e.closes, "OnClose")
				assert.ErrorIs(t, c.reason, listen.ErrShutdown, "OnClose ran before Shutdown returned")
			}
			assert.ErrorIs(t, reasonOf(t, sa), listen.ErrShutdown)
			assert.ErrorIs(t, reasonOf(t, sb), listen.ErrShutdown)
			ca := a.message(t)
			assert.Equal(t, jsonOf(t, `{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}`), any(ca))
			a.end(t)
			cb := b.message(t)
			assert.Equal(t, jsonOf(t, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`), any(cb))
			b.end(t)

			// New listens are refused.
			resp := e.do(t, http.MethodPost, listenBody(`"late"`, `{}`), listenHeaders())
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			eb := readError(t, resp)
			assert.Equal(t, `"late"`, string(eb.ID))
			assert.Equal(t, -32603, eb.Error.Code)
			assert.Equal(t, core.ShuttingDown, eb.Error.Message)
			assert.Len(t, e.src.Streams(), 2)

			assert.Equal(t, listen.Stats{Opened: 2, Closed: 2, Refused: 1, Draining: true}, e.h.Server().Stats())
			require.NoError(t, e.h.Shutdown(context.Background()), "Shutdown is idempotent")
		})
	}
}

// Shutdown with nothing open returns at once, and refuses what comes next.
func TestShutdownIdle(t *testing.T) {
	h := newHandler(t, listentest.NewSource(), config{})
	require.NoError(t, h.Shutdown(context.Background()))
	assert.Equal(t, listen.Stats{Draining: true}, h.Server().Stats())
	require.NoError(t, h.Shutdown(context.Background()))
}

// Shutdown waits for a listen that is still being opened, and returns the
// context's error if it ends first; that listen, once open, is acknowledged
// and completed.
func TestShutdownDuringOpen(t *testing.T) {
	src := listentest.NewSource()
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	src.BeforeOpen = func(context.Context, *listen.Request) error {
		entered <- struct{}{}
		return nil
	}
	src.Gate = gate
	e := newEnv(t, src, nil, envConfig{})

	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, e.ts.URL, strings.NewReader(listenBody(`"slow"`, `{"toolsListChanged":true}`)))
		if err != nil {
			got <- result{err: err}
			return
		}
		req.Header = listenHeaders()
		resp, err := e.client.Do(req)
		got <- result{resp, err}
	}()
	recv(t, entered, "Source.Open")
	assert.Equal(t, 1, e.h.Server().Stats().Active)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, e.h.Shutdown(ctx), context.Canceled, "the opening listen holds Shutdown")

	close(gate)
	r := recv(t, got, "the response")
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	require.Equal(t, http.StatusOK, r.resp.StatusCode)
	s := newSSE(r.resp)
	assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
	assert.Equal(t, `"slow"`, subID(t, s.message(t), "result"))
	s.end(t)
	assert.ErrorIs(t, reasonOf(t, recv(t, src.Opened(), "the stream")), listen.ErrShutdown)
	require.NoError(t, e.h.Shutdown(context.Background()))
}

// Over MaxStreams a listen gets 503 without its source being opened; an
// ended stream frees its slot.
func TestCapacity(t *testing.T) {
	e := newEnv(t, nil, &config{MaxStreams: 1, MaxStreamsPerKey: -1}, envConfig{})
	first := e.listen(t, `"one"`, `{}`)
	first.message(t)
	st := streamOf(t, e.src, "one")

	resp := e.do(t, http.MethodPost, listenBody(`"two"`, `{}`), listenHeaders())
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	b := readError(t, resp)
	assert.Equal(t, `"two"`, string(b.ID))
	assert.Equal(t, -32603, b.Error.Code)
	assert.Equal(t, core.CapacityExhausted, b.Error.Message)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"), "DefaultRetryAfter, in seconds")
	assert.Len(t, e.src.Streams(), 1, "the refused listen never reached the source")
	assert.Equal(t, listen.Stats{Active: 1, Opened: 1, Refused: 1}, e.h.Server().Stats())

	// A disconnect frees the slot (before OnClose runs).
	first.resp.Body.Close()
	assert.ErrorIs(t, reasonOf(t, st), listen.ErrDisconnected)
	assert.ErrorIs(t, recv(t, e.closes, "OnClose of the first listen").reason, listen.ErrDisconnected)

	third := e.listen(t, `"three"`, `{}`)
	assert.Equal(t, spec.MethodAcknowledged, third.message(t)["method"])
	streamOf(t, e.src, "three").End()
	third.message(t)
	third.end(t)
}

// MaxStreamsPerKey bounds the listens of one key (StreamKey: here the
// principal Authenticate returned) without touching the others': the
// key's next listen gets 429 with Retry-After before its source is opened,
// other keys still open theirs, and an ended stream gives its key's slot
// back. Without it one client could take every MaxStreams slot.
func TestMaxStreamsPerKey(t *testing.T) {
	var mu sync.Mutex
	var keys []any
	e := newEnv(t, nil, &config{
		MaxStreams:       10,
		MaxStreamsPerKey: 2,
		RetryAfter:       1500 * time.Millisecond,
		Authenticate:     func(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil },
		StreamKey: func(req *listen.Request) string {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, req.Auth)
			return req.Auth.(string)
		},
	}, envConfig{})
	as := func(user string) http.Header { return headers("X-User", user) }
	open := func(id, user string) *sse {
		resp := e.do(t, http.MethodPost, listenBody(`"`+id+`"`, `{}`), as(user))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		s := newSSE(resp)
		s.message(t)
		return s
	}
	a1, a2 := open("a1", "alice"), open("a2", "alice")
	_ = a2

	resp := e.do(t, http.MethodPost, listenBody(`"a3"`, `{}`), as("alice"))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"), "1.5 s, rounded up")
	b := readError(t, resp)
	assert.Equal(t, `"a3"`, string(b.ID))
	assert.Equal(t, jsonrpc.CodeInternalError, b.Error.Code)
	assert.Equal(t, core.TooManyForKey, b.Error.Message)
	assert.Len(t, e.src.Streams(), 2, "the refused listen never reached the source")

	open("b1", "bob") // another key is not affected
	assert.Equal(t, listen.Stats{Active: 3, Opened: 3, Refused: 1}, e.h.Server().Stats())

	// A stream's end gives its key's slot back.
	a1.resp.Body.Close()
	recv(t, e.closes, "OnClose of a1")
	open("a4", "alice")
	mu.Lock()
	assert.Equal(t, []any{"alice", "alice", "alice", "bob", "alice"}, keys)
	mu.Unlock()
	require.NoError(t, e.h.Shutdown(context.Background()))
}
