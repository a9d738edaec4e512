package streamhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// completion is a stream's completion result, as its client read it.
type completion struct {
	id  string
	at  time.Duration // since Shutdown was called
	msg map[string]any
}

// With a DrainWindow, Shutdown over HTTP refuses a listen made during the
// drain (503, Retry-After, the exact JSON-RPC error), and sends every open
// stream its completion (with the retry hint under RetryHint) before it
// returns, one by one, spread evenly over the window: the i-th completion
// a client reads comes within the i-th 1/n of the window (synctest's
// clock; the streams are HTTP/1.1 connections the Handler took over, on
// testkit.PipeListener).
func TestPacedDrainOverHTTP(t *testing.T) {
	for _, hint := range []bool{false, true} {
		t.Run(fmt.Sprintf("RetryHint=%v", hint), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { pacedDrain(t, hint) })
		})
	}
}

func pacedDrain(t *testing.T, hint bool) {
	const n = 40
	const window = 20 * time.Second
	const retryAfter = 3 * time.Second
	h := newHandler(t, listentest.NewSource(), config{
		RetryAfter: retryAfter,
		Listen:     listen.Options{Capabilities: caps(), DrainWindow: window, RetryHint: hint},
	})
	ln := testkit.NewPipeListener()
	hs := &http.Server{Handler: h}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }() // ends on hs.Close below
	tr := &http.Transport{DialContext: ln.Dial}
	client := &http.Client{Transport: tr}
	post := func(id string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://pipe/mcp", strings.NewReader(listenBody(`"`+id+`"`, `{"toolsListChanged":true}`)))
		require.NoError(t, err)
		req.Header = listenHeaders()
		resp, err := client.Do(req)
		require.NoError(t, err)
		return resp
	}

	var start time.Time
	var mu sync.Mutex
	var got []completion
	var readers sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		resp := post(id)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		s := newSSE(resp)
		require.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
		readers.Go(func() { // ends with the stream: its completion, then EOF
			defer resp.Body.Close()
			ev, err := s.frame()
			for err == nil && ev.IsComment {
				ev, err = s.frame()
			}
			if !assert.NoError(t, err, "stream %s", id) {
				return
			}
			var msg map[string]any
			assert.NoError(t, json.Unmarshal([]byte(ev.Data), &msg))
			mu.Lock()
			got = append(got, completion{id, time.Since(start), msg})
			mu.Unlock()
			_, err = io.Copy(io.Discard, resp.Body)
			assert.NoError(t, err, "stream %s ends cleanly", id)
		})
	}
	require.Equal(t, n, h.Server().Stats().Active)

	start = time.Now()
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(context.Background()) }()
	time.Sleep(window / 2) // the bubble's clock: half the drain
	synctest.Wait()
	assert.True(t, h.Server().Stats().Draining, "the readiness signal")
	mu.Lock()
	half := len(got)
	mu.Unlock()
	assert.InDelta(t, n/2, half, 1, "half the streams completed at half the window")

	resp := post("late")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"late","error":{"code":-32603,"message":"Server is shutting down"}}`, string(body))

	require.NoError(t, <-shut)
	took := time.Since(start)
	// The completions are in the clients' buffers: let the readers run,
	// the clock stopped.
	synctest.Wait()
	assert.LessOrEqual(t, took, window, "Shutdown returns within the window")
	mu.Lock()
	assert.Len(t, got, n, "every stream read its completion before Shutdown returned")
	mu.Unlock()
	readers.Wait()

	slices.SortFunc(got, func(a, b completion) int { return int(a.at - b.at) })
	share := window / n
	var ids []string
	for i, c := range got {
		ids = append(ids, c.id)
		assert.True(t, c.at >= time.Duration(i)*share && c.at <= time.Duration(i+1)*share,
			"completion %d (%s) at %v, not within its share [%v, %v]", i, c.id, c.at, time.Duration(i)*share, time.Duration(i+1)*share)
		assert.LessOrEqual(t, c.at, took)
		result, _ := c.msg["result"].(map[string]any)
		require.NotNil(t, result, "stream %s: %v", c.id, c.msg)
		assert.Equal(t, "complete", result["resultType"], "stream %s", c.id)
		meta, _ := result["_meta"].(map[string]any)
		assert.Equal(t, c.id, meta[spec.MetaSubscriptionID], "stream %s", c.id)
		assert.NotContains(t, meta, spec.MetaEndReason, "a shutdown is no early ending")
		if !hint {
			assert.NotContains(t, meta, spec.MetaRetryAfterMs)
			continue
		}
		ms, ok := meta[spec.MetaRetryAfterMs].(float64)
		assert.True(t, ok && ms >= 0 && ms <= float64(retryAfter.Milliseconds()), "stream %s: retry hint %v", c.id, meta[spec.MetaRetryAfterMs])
	}
	assert.False(t, slices.IsSorted(ids), "the streams end in random order, not in opening order")
	assert.Equal(t, listen.Stats{Opened: n, Closed: n, Refused: 1, Draining: true}, h.Server().Stats())

	require.NoError(t, hs.Close())
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
	tr.CloseIdleConnections()
}
