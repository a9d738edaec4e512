package hub_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// Shutdown ends every listener gracefully (queued events first, then
// ErrClosed), waits until each stream is closed, and refuses new listeners.
func TestShutdownEndsEveryListenerAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		a := openStream(t, h, "a", listen.Filter{"toolsListChanged": true})
		b := openStream(t, h, "b", listen.Filter{"toolsListChanged": true})
		h.ToolsListChanged()

		done := make(chan error, 1)
		go func() { done <- h.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Shutdown returned while streams were still open")
		default:
		}

		for _, s := range []listen.Stream{a, b} {
			ev, err := s.Next()
			require.NoError(t, err, "queued events are handed out first")
			assert.Equal(t, listen.KindToolsListChanged, ev.Kind)
			_, err = s.Next()
			assert.ErrorIs(t, err, listen.ErrClosed)
		}
		a.Close(listen.ErrComplete)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Shutdown returned with one stream still open")
		default:
		}
		b.Close(listen.ErrComplete)
		require.NoError(t, <-done)
		assert.Equal(t, 0, h.Stats().Subscriptions)

		_, _, err := h.Open(context.Background(), request("late"), listen.Filter{})
		assert.ErrorIs(t, err, listen.ErrShutdown)
		assert.NoError(t, h.Shutdown(context.Background()), "idempotent")
	})
}

// A Shutdown whose context ends returns its error; the listeners still end.
func TestShutdownBoundedByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		s := openStream(t, h, "a", listen.Filter{"toolsListChanged": true})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, h.Shutdown(ctx), context.Canceled)
		_, err := s.Next()
		assert.ErrorIs(t, err, listen.ErrClosed)
		s.Close(listen.ErrComplete)
	})
}

// An Open racing Shutdown either is refused or gets a listener that
// Shutdown completes: no stream opened during a Shutdown stays open after
// it (its Next ends instead of blocking).
func TestShutdownRacingOpen(t *testing.T) {
	for range 200 {
		h := newHub(t, hub.Options{})
		var (
			mu      sync.Mutex
			streams []listen.Stream
			wg      sync.WaitGroup
		)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, st, err := h.Open(context.Background(), request("r"), listen.Filter{"toolsListChanged": true})
					if err != nil {
						assert.ErrorIs(t, err, listen.ErrShutdown)
						return
					}
					mu.Lock()
					streams = append(streams, st)
					mu.Unlock()
				}
			}()
		}
		shut := make(chan error, 1)
		go func() { shut <- h.Shutdown(context.Background()) }()
		wg.Wait()
		for _, st := range streams {
			next := make(chan error, 1)
			go func() { _, err := st.Next(); next <- err }()
			select {
			case err := <-next:
				assert.ErrorIs(t, err, listen.ErrClosed)
			case <-time.After(10 * time.Second): // failsafe
				t.Fatal("a stream opened during Shutdown was not completed: its Next blocks")
			}
			st.Close(listen.ErrComplete)
		}
		require.NoError(t, <-shut)
	}
}

// Shutdown calls a stream's notify function with no lock of the hub held:
// notify may read the hub (here, its Stats).
func TestShutdownNotifiesWithoutTheHubLock(t *testing.T) {
	h := newHub(t, hub.Options{})
	_, st, err := h.Open(context.Background(), request("n"), listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	ns, ok := st.(listen.NotifyStream)
	require.True(t, ok, "a hub stream is a listen.NotifyStream")
	notified := make(chan hub.Stats, 1)
	ns.SetNotify(func() { notified <- h.Stats() })

	done := make(chan error, 1)
	go func() { done <- h.Shutdown(context.Background()) }()
	select {
	case s := <-notified:
		assert.Equal(t, 1, s.Closing, "notified once the listener was marked")
	case <-time.After(10 * time.Second): // failsafe
		t.Fatal("notify did not return: Shutdown called it under the hub's lock")
	}
	st.Close(listen.ErrComplete)
	require.NoError(t, <-done)
}
