package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// Churn soak bounds; with -short, a short soak (soakShortCycles or
// soakShortBudget). LISTEN_SOAK (a duration, such as 10s) overrides the
// time budget.
const (
	soakMaxCycles   = 100_000
	soakBudget      = 60 * time.Second
	soakShortCycles = 2_000
	soakShortBudget = 5 * time.Second
	soakHTTPWorkers = 2
	// soakHeapSlack is how much more heap may be in use after the soak
	// than before it (pools, runtime caches, the race detector's own
	// allocations); a per-cycle leak of 100 bytes over 100,000 cycles would
	// exceed it.
	soakHeapSlack = 8 << 20
)

// 100,000 listen open/close cycles (or ~60 s, whichever first), split
// between HTTP and stdio, on one hub.Hub that a publisher goroutine feeds
// tools/list_changed throughout. HTTP cycles: open, read the
// acknowledgement, every other cycle one event, close the response body
// (one connection per cycle, no keep-alive). stdio cycles: many listens on
// one connection (one on io.Pipe, one on os.Pipe), each cancelled with
// notifications/cancelled after its acknowledgement (and every other cycle
// one event). Afterwards the goroutines are back to their baseline and the
// heap has not grown beyond soakHeapSlack.
func TestChurnSoak(t *testing.T) {
	budget, maxCycles := soakBudget, int64(soakMaxCycles)
	if testing.Short() {
		budget, maxCycles = soakShortBudget, soakShortCycles
	}
	if v := os.Getenv("LISTEN_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "LISTEN_SOAK")
		budget = d
	}

	goroutinesBefore, heapBefore := settle()
	ignore := goleak.IgnoreCurrent()

	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	opts := listen.Options{Capabilities: allCaps()}
	hh, err := streamhttp.New(listen.NewServer(h, opts), streamhttp.Options{
		KeepAlive:    failsafe,
		WriteTimeout: failsafe,
	})
	require.NoError(t, err)
	ts := httptest.NewServer(hh)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: failsafe}
	ss, err := stdio.New(listen.NewServer(h, opts), stdio.Options{WriteTimeout: failsafe})
	require.NoError(t, err)
	conns := []*stdioConn{
		newStdioConn(t, ss, false, connOptions{routeBuf: 16, strict: true}),
		newStdioConn(t, ss, true, connOptions{routeBuf: 16, strict: true}),
	}

	// The publisher: one tools/list_changed every 200µs until the cycles end.
	stopPub := make(chan struct{})
	pubDone := make(chan int)
	go func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-tick.C:
				h.ToolsListChanged()
				n++
			case <-stopPub:
				pubDone <- n
				return
			}
		}
	}()

	deadline := time.Now().Add(budget)
	var httpN, stdioN atomic.Int64
	var nextID atomic.Int64
	claim := func(n *atomic.Int64) (int64, bool) {
		if time.Now().After(deadline) {
			return 0, false
		}
		if n.Add(1) > maxCycles/2 {
			n.Add(-1)
			return 0, false
		}
		return nextID.Add(1), true
	}
	errs := make(chan error, soakHTTPWorkers+len(conns))
	var failed atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for range soakHTTPWorkers {
		wg.Go(func() {
			for !failed.Load() {
				id, ok := claim(&httpN)
				if !ok {
					return
				}
				if err := httpCycle(client, ts.URL, id, id%2 == 0); err != nil {
					failed.Store(true)
					errs <- fmt.Errorf("HTTP cycle %d: %w", id, err)
					return
				}
			}
		})
	}
	for _, c := range conns {
		wg.Go(func() {
			timer := time.NewTimer(failsafe)
			defer timer.Stop()
			for !failed.Load() {
				id, ok := claim(&stdioN)
				if !ok {
					return
				}
				if err := stdioCycle(c, timer, id, id%2 == 0); err != nil {
					failed.Store(true)
					errs <- fmt.Errorf("stdio cycle %d: %w", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopPub)
	published := <-pubDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Tear down: stdio connections end on EOF, the HTTP server closes.
	var late, lateTerms int64
	for _, c := range conns {
		c.shut(t)
		assert.NoError(t, <-c.served)
		late += c.late.Load()
		lateTerms += c.lateTerms.Load()
	}
	assert.Zero(t, lateTerms, "a terminal message for a cancelled listen")
	// Every HTTP client has closed its response, but a taken-over stream may
	// not have seen it yet, and httptest.Server.Close does not wait for
	// hijacked connections: Shutdown waits for every stream to end.
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	require.NoError(t, hh.Shutdown(ctx))
	ts.Close()
	client.CloseIdleConnections()
	hs := hh.Server().Stats()
	assert.Zero(t, hs.Active)
	assert.Equal(t, hs.Opened, hs.Closed)
	assert.EqualValues(t, httpN.Load(), hs.Opened)
	st := h.Stats()
	assert.Zero(t, st.Subscriptions, "hub listeners left open")
	assert.Zero(t, st.Queued)
	dropped := st.Dropped
	h, hh, ts, client, ss, conns = nil, nil, nil, nil, nil, nil
	_, _, _, _, _, _ = h, hh, ts, client, ss, conns

	goleak.VerifyNone(t, ignore) // waits for every goroutine of the soak to end
	goroutinesAfter, heapAfter := settle()
	cycles := httpN.Load() + stdioN.Load()
	t.Logf("churn soak: %d cycles (%d HTTP, %d stdio) in %v (%.0f/s; budget %v, cap %d)",
		cycles, httpN.Load(), stdioN.Load(), elapsed.Round(time.Millisecond), float64(cycles)/elapsed.Seconds(), budget, maxCycles)
	t.Logf("churn soak: %d events published, %d dropped by idle listeners' queues, %d stdio messages after a cancellation (in flight)",
		published, dropped, late)
	t.Logf("churn soak: goroutines %d before, %d after; heap in use %s before, %s after (%+d bytes, %.1f bytes/cycle)",
		goroutinesBefore, goroutinesAfter, mib(heapBefore), mib(heapAfter), int64(heapAfter)-int64(heapBefore),
		float64(int64(heapAfter)-int64(heapBefore))/float64(max(cycles, 1)))
	assert.Equal(t, goroutinesBefore, goroutinesAfter, "goroutines")
	assert.LessOrEqual(t, int64(heapAfter)-int64(heapBefore), int64(soakHeapSlack), "heap growth")
	assert.Positive(t, httpN.Load())
	assert.Positive(t, stdioN.Load())
}

// settle collects garbage and returns the goroutine count and the heap in
// use.
func settle() (goroutines int, heapInuse uint64) {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapInuse
}

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// httpCycle opens a listen, reads its acknowledgement (and an event), and
// closes the response.
func httpCycle(client *http.Client, url string, n int64, event bool) error {
	id := strconv.FormatInt(n, 10)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(listenBody(id, toolsFilter)))
	if err != nil {
		return err
	}
	req.Header = listenHeaders()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	r := listentest.NewSSEReader(resp.Body)
	m, err := nextMsg(r)
	if err != nil {
		return err
	}
	if m.method() != spec.MethodAcknowledged || m.subID() != id {
		return fmt.Errorf("want the acknowledgement of %s, got %s", id, m)
	}
	if event {
		if m, err = nextMsg(r); err != nil {
			return err
		}
		if m.method() != spec.MethodToolsListChanged || m.subID() != id {
			return fmt.Errorf("want a tools/list_changed for %s, got %s", id, m)
		}
	}
	return nil
}

func nextMsg(r *listentest.SSEReader) (msg, error) {
	data, err := r.Data()
	if err != nil {
		return msg{}, err
	}
	return parseMsg(data)
}

// stdioCycle opens a listen on c, reads its acknowledgement (and an event),
// and cancels it.
func stdioCycle(c *stdioConn, timer *time.Timer, n int64, event bool) error {
	id := strconv.FormatInt(n, 10)
	ch := c.routes.ch(id)
	defer c.routes.drop(id)
	if _, err := c.inW.Write([]byte(listenBody(id, toolsFilter) + "\n")); err != nil {
		return err
	}
	next := func() (msg, error) {
		timer.Reset(failsafe)
		defer timer.Stop()
		select {
		case m := <-ch:
			return m, nil
		case <-timer.C:
			return msg{}, errors.New("timed out")
		}
	}
	m, err := next()
	if err != nil {
		return err
	}
	if m.method() != spec.MethodAcknowledged || m.subID() != id {
		return fmt.Errorf("want the acknowledgement of %s, got %s", id, m)
	}
	if event {
		if m, err = next(); err != nil {
			return err
		}
		if m.method() != spec.MethodToolsListChanged || m.subID() != id {
			return fmt.Errorf("want a tools/list_changed for %s, got %s", id, m)
		}
	}
	_, err = c.inW.Write([]byte(cancelLine(id, "churn") + "\n"))
	return err
}
