package listen_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// served is a subscription being served, with what it wrote.
type served struct {
	sub  *listen.Subscription
	col  *collector
	done chan error
	at   time.Time // when Serve returned
}

// serveWith opens a listen with opts and req's Auth and Expiry, and serves
// it on a goroutine.
func serveWith(t *testing.T, src listen.Source, opts *listen.Options, f listen.Filter, auth any, expiry time.Time) *served {
	t.Helper()
	req := request(jsonrpc.StringID("l"), f)
	req.Auth, req.Expiry = auth, expiry
	sub, err := listen.Open(context.Background(), src, req, opts)
	require.NoError(t, err)
	s := &served{sub: sub, col: newCollector(), done: make(chan error, 1)}
	go func() {
		r := sub.Serve(t.Context(), s.col.sink(0))
		s.at = time.Now()
		s.done <- r
	}()
	return s
}

// endReasonOf returns the endReason of the completion s wrote last ("" if
// it has none or is not a completion).
func (s *served) endReasonOf(t *testing.T) string {
	s.col.mu.Lock()
	defer s.col.mu.Unlock()
	m := decode(t, []byte(s.col.msgs[len(s.col.msgs)-1]))
	res, _ := m["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	r, _ := meta[spec.MetaEndReason].(string)
	return r
}

// Streams opened together with MaxLifetime end, with the completion and
// the reason "lifetime", each within [MaxLifetime-LifetimeJitter,
// MaxLifetime] of its open, and not all at the same time.
func TestLifetimeEndsWithinItsJitteredBound(t *testing.T) {
	for _, tc := range []struct {
		name           string
		max, jitter    time.Duration
		lowest, spread time.Duration
	}{
		{"default jitter", 10 * time.Minute, 0, 9 * time.Minute, time.Minute},
		{"explicit jitter", time.Hour, 5 * time.Minute, 55 * time.Minute, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := &listen.Options{Capabilities: allCaps, MaxLifetime: tc.max, LifetimeJitter: tc.jitter}
				start := time.Now()
				var all []*served
				for range 40 {
					all = append(all, serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, nil, time.Time{}))
				}
				var ends []time.Duration
				for _, s := range all {
					assert.Equal(t, listen.ErrLifetime, <-s.done)
					took := s.at.Sub(start)
					assert.GreaterOrEqual(t, took, tc.lowest)
					assert.LessOrEqual(t, took, tc.max)
					assert.Equal(t, []string{spec.MethodAcknowledged, "result:complete"}, s.col.methods(t))
					assert.Equal(t, "lifetime", s.endReasonOf(t))
					ends = append(ends, took)
				}
				slices.Sort(ends)
				assert.Greater(t, len(slices.Compact(ends)), 20, "jittered: the ends are spread")
				assert.Greater(t, ends[len(ends)-1]-ends[0], tc.spread/2)
			})
		})
	}
}

// The lifetime ends with the completion even in the EndWithError form.
func TestLifetimeIsACompletionInEitherForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &listen.Options{Capabilities: allCaps, MaxLifetime: time.Minute, EndWithError: true}
		s := serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, nil, time.Time{})
		assert.Equal(t, listen.ErrLifetime, <-s.done)
		assert.Equal(t, "lifetime", s.endReasonOf(t))
	})
}

// A credential's expiry ends the stream when it passes, before the
// lifetime when it comes first; one already passed ends it at once, after
// the acknowledgement.
func TestExpiryEndsTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &listen.Options{Capabilities: allCaps, MaxLifetime: time.Hour}
		start := time.Now()
		soon := serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, "tok", start.Add(5*time.Minute))
		late := serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, "tok", start.Add(2*time.Hour))
		gone := serveWith(t, newTestSource(), &listen.Options{Capabilities: allCaps}, listen.Filter{"toolsListChanged": true}, "tok", start.Add(-time.Second))

		assert.Equal(t, listen.ErrExpired, <-gone.done)
		assert.Equal(t, time.Duration(0), gone.at.Sub(start))
		assert.Equal(t, "expired", gone.endReasonOf(t))
		assert.Equal(t, listen.ErrExpired, <-soon.done)
		assert.Equal(t, 5*time.Minute, soon.at.Sub(start))
		assert.Equal(t, listen.ErrLifetime, <-late.done, "the lifetime came first")
	})
}

// A closed subscription lets go of its timer: nothing fires later.
func TestClosedSubscriptionStopsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		opts := &listen.Options{Capabilities: allCaps, MaxLifetime: time.Hour}
		s := serveWith(t, src, opts, listen.Filter{"toolsListChanged": true}, nil, time.Now().Add(time.Minute))
		<-s.col.got
		s.sub.Close(listen.Cancelled(""))
		<-s.done
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.ErrorIs(t, s.sub.CloseReason(), listen.ErrCancelled)
	})
}

// Disabled refuses every new listen with -32601, before its source is
// opened.
func TestDisabledRefusesEveryListen(t *testing.T) {
	src := newTestSource()
	_, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{}), &listen.Options{Disabled: true})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, we.Code)
	assert.Equal(t, "Method not found: subscriptions/listen is turned off on this server", we.Message)
	assert.Empty(t, src.opened, "the source was not opened")
}

// principalAuth is a principal for the Access tests.
type principalAuth struct{ user string }

// TestAccessScheduledRecheck: every Every, Check runs once per principal;
// a refused principal's streams end with ErrRevoked, the others go on;
// the schedule stops with the last stream.
func TestAccessScheduledRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		revoked := map[string]bool{}
		access := &listen.Access{
			Every: time.Minute,
			Key:   func(auth any) any { return auth.(*principalAuth).user },
			Check: func(_ context.Context, auth any) error {
				mu.Lock()
				defer mu.Unlock()
				u := auth.(*principalAuth).user
				calls[u]++
				if revoked[u] {
					return errors.New("grant withdrawn")
				}
				return nil
			},
		}
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		f := listen.Filter{"toolsListChanged": true}
		var bob, alice []*served
		for range 3 {
			bob = append(bob, serveWith(t, newTestSource(), opts, f, &principalAuth{"bob"}, time.Time{}))
			alice = append(alice, serveWith(t, newTestSource(), opts, f, &principalAuth{"alice"}, time.Time{}))
		}
		synctest.Wait()
		assert.Equal(t, 6, listen.Listens(access))
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, map[string]int{"bob": 1, "alice": 1}, calls, "one Check per principal")
		revoked["bob"] = true
		mu.Unlock()

		time.Sleep(time.Minute)
		for _, s := range bob {
			reason := <-s.done
			assert.ErrorIs(t, reason, listen.ErrRevoked)
			assert.Equal(t, "revoked", listen.Classify(reason))
			assert.Equal(t, "revoked", s.endReasonOf(t))
		}
		synctest.Wait()
		for _, s := range alice {
			assert.Nil(t, s.sub.CloseReason(), "another principal's streams are untouched")
		}
		assert.Equal(t, 3, listen.Listens(access))
		for _, s := range alice {
			s.sub.Close(listen.Cancelled(""))
			<-s.done
		}
		assert.Equal(t, 0, listen.Listens(access))
		mu.Lock()
		before := calls["alice"]
		mu.Unlock()
		time.Sleep(time.Hour)
		mu.Lock()
		assert.Equal(t, before, calls["alice"], "no listen, no schedule")
		mu.Unlock()
	})
}

// TestAccessOnDemand: Recheck, RecheckAll and End work without a schedule,
// and return how many streams they ended; a panicking Check revokes.
func TestAccessOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refuse atomic.Value
		refuse.Store("")
		access := &listen.Access{Check: func(_ context.Context, auth any) error {
			switch {
			case auth == "panics":
				panic("check")
			case auth == refuse.Load():
				return listen.ErrExpired
			}
			return nil
		}}
		opts := &listen.Options{Capabilities: allCaps, Access: access, EndWithError: true}
		f := listen.Filter{"toolsListChanged": true}
		a1 := serveWith(t, newTestSource(), opts, f, "a", time.Time{})
		a2 := serveWith(t, newTestSource(), opts, f, "a", time.Time{})
		b := serveWith(t, newTestSource(), opts, f, "b", time.Time{})
		p := serveWith(t, newTestSource(), opts, f, "panics", time.Time{})
		c := serveWith(t, newTestSource(), opts, f, "c", time.Time{})
		synctest.Wait()

		assert.Equal(t, 0, access.Recheck(t.Context(), authIs("a")))
		refuse.Store("a")
		assert.Equal(t, 2, access.Recheck(t.Context(), authIs("a")))
		for _, s := range []*served{a1, a2} {
			assert.ErrorIs(t, <-s.done, listen.ErrExpired)
			assert.Equal(t, []string{spec.MethodAcknowledged, "error:Subscription ended: credential expired"}, s.col.methods(t))
		}
		assert.Equal(t, 1, access.Recheck(t.Context(), nil), "the panicking Check revokes")
		assert.ErrorIs(t, <-p.done, listen.ErrRevoked)
		c.sub.End(listen.ErrRevoked)
		assert.ErrorIs(t, <-c.done, listen.ErrRevoked)
		synctest.Wait()
		assert.Nil(t, b.sub.CloseReason())
		b.sub.Close(nil)
		<-b.done
	})
}

// TestAccessReadsAgain: with CanRead, a re-check asks it again for each
// URI; a stream that may read none of its URIs, and asked for nothing
// else, ends; one that also asked for a list change goes on.
func TestAccessReadsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		readable := map[string]bool{"file:///a": true, "file:///b": true}
		asked := 0
		access := &listen.Access{}
		opts := &listen.Options{Capabilities: allCaps, Access: access, CanRead: func(_ context.Context, _ *listen.Request, uri string) bool {
			mu.Lock()
			defer mu.Unlock()
			asked++
			return readable[uri]
		}}
		onlyURIs := serveWith(t, newTestSource(), opts, listen.Filter{"resourceSubscriptions": []any{"file:///a", "file:///b"}}, "u", time.Time{})
		withTools := serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true, "resourceSubscriptions": []any{"file:///a"}}, "u", time.Time{})
		synctest.Wait()
		mu.Lock()
		readable["file:///a"] = false
		asked = 0
		mu.Unlock()
		assert.Equal(t, 0, access.Recheck(t.Context(), nil), "file:///b is still readable")
		mu.Lock()
		assert.Equal(t, 2, asked, "once per URI for the principal: a (no), b (yes)")
		readable["file:///b"] = false
		mu.Unlock()
		assert.Equal(t, 1, access.Recheck(t.Context(), nil))
		assert.ErrorIs(t, <-onlyURIs.done, listen.ErrRevoked)
		synctest.Wait()
		assert.Nil(t, withTools.sub.CloseReason(), "it still reads its tools list")
		withTools.sub.Close(nil)
		<-withTools.done
	})
}

// TestAccessDeliver: with Deliver, CanRead decides each resource update at
// delivery; its verdict is cached until the principal's next re-check.
func TestAccessDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		readable := map[string]bool{"file:///a": true, "file:///b": true, "file:///d/": true, "file:///d/x": true}
		asked := 0
		access := &listen.Access{Deliver: true}
		opts := &listen.Options{
			Capabilities: allCaps, Access: access, SubResources: &listen.SubResources{},
			CanRead: func(_ context.Context, _ *listen.Request, uri string) bool {
				mu.Lock()
				defer mu.Unlock()
				asked++
				return readable[uri]
			},
		}
		src := newTestSource()
		s := serveWith(t, src, opts, listen.Filter{"resourceSubscriptions": []any{"file:///a", "file:///b", "file:///d/"}}, "u", time.Time{})
		<-s.col.got
		st := src.last()
		send := func(uri string) {
			st.emit(listen.ResourceUpdated(uri))
			synctest.Wait()
		}
		mu.Lock()
		asked = 0
		mu.Unlock()
		send("file:///a")
		send("file:///a")
		send("file:///d/x")
		send("file:///d/x")
		mu.Lock()
		assert.Equal(t, 2, asked, "each URI asked once: the verdicts are cached")
		readable["file:///a"] = false
		readable["file:///d/x"] = false
		mu.Unlock()
		send("file:///a")
		assert.Len(t, s.col.methods(t), 6, "cached: still delivered until the re-check")
		access.Recheck(t.Context(), authIs("u"))
		send("file:///a")
		send("file:///d/x")
		send("file:///b")
		assert.Equal(t, []string{
			spec.MethodAcknowledged,
			spec.MethodResourceUpdated, spec.MethodResourceUpdated,
			spec.MethodResourceUpdated, spec.MethodResourceUpdated,
			spec.MethodResourceUpdated, // the cached a
			spec.MethodResourceUpdated, // b: a and d/x dropped after the re-check
		}, s.col.methods(t))
		s.sub.Close(nil)
		<-s.done
	})
}

// TestAccessKeys: streams group by Key; an Auth that is not comparable, or
// a Key that panics, makes each stream a principal of its own (one Check
// each) instead of failing the open.
func TestAccessKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		checks := 0
		check := func(context.Context, any) error {
			mu.Lock()
			defer mu.Unlock()
			checks++
			return nil
		}
		f := listen.Filter{"toolsListChanged": true}
		for _, tc := range []struct {
			name   string
			key    func(any) any
			auths  []any
			checks int
		}{
			{"comparable auth", nil, []any{"a", "a", "b"}, 2},
			{"map auth", nil, []any{map[string]any{"u": "a"}, map[string]any{"u": "a"}}, 2},
			{"key", func(a any) any { return a.(map[string]any)["u"] }, []any{map[string]any{"u": "a"}, map[string]any{"u": "a"}}, 1},
			{"key returning a slice", func(any) any { return []string{"x"} }, []any{1, 2}, 2},
			{"panicking key", func(any) any { panic("key") }, []any{1, 2}, 2},
		} {
			access := &listen.Access{Key: tc.key, Check: check}
			opts := &listen.Options{Capabilities: allCaps, Access: access}
			var all []*served
			for _, a := range tc.auths {
				all = append(all, serveWith(t, newTestSource(), opts, f, a, time.Time{}))
			}
			mu.Lock()
			checks = 0
			mu.Unlock()
			assert.Equal(t, 0, access.Recheck(t.Context(), nil), tc.name)
			mu.Lock()
			assert.Equal(t, tc.checks, checks, tc.name)
			mu.Unlock()
			for _, s := range all {
				s.sub.Close(nil)
				<-s.done
			}
			assert.Equal(t, 0, listen.Listens(access), tc.name)
		}
	})
}
