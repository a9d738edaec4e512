package listen_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// token is a credential of one user: streams group by user (Key), and a
// Check refuses the revoked tokens.
type token struct{ user, id string }

func byUser(auth any) any { return auth.(*token).user }

// revokes returns a Check that refuses the tokens named, and records the
// tokens it was asked about.
func revokes(asked *[]string, mu *sync.Mutex, ids ...string) func(context.Context, any) error {
	return func(_ context.Context, auth any) error {
		t := auth.(*token)
		mu.Lock()
		*asked = append(*asked, t.id)
		mu.Unlock()
		for _, id := range ids {
			if t.id == id {
				return listen.ErrRevoked
			}
		}
		return nil
	}
}

// TestAccessJudgesByAnOpenStream: a token refresh (alice listens with t1,
// then with a fresh t2, and closes the first) keeps her stream when t1 is
// revoked: Check, and Recheck's match, get the credential of her newest
// open stream, not of one that ended.
func TestAccessJudgesByAnOpenStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var asked []string
		access := &listen.Access{Key: byUser, Check: revokes(&asked, &mu, "t1")}
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		f := listen.Filter{"toolsListChanged": true}
		s1 := serveWith(t, newTestSource(), opts, f, &token{"alice", "t1"}, time.Time{})
		s2 := serveWith(t, newTestSource(), opts, f, &token{"alice", "t2"}, time.Time{})
		synctest.Wait()
		s1.sub.Close(nil)
		<-s1.done

		var matched []string
		n := access.Recheck(t.Context(), func(auth any) bool {
			matched = append(matched, auth.(*token).id)
			return true
		})
		assert.Equal(t, 0, n, "t2 is valid: alice's open stream stays")
		assert.Equal(t, []string{"t2"}, matched, "match gets the open stream's credential")
		mu.Lock()
		assert.Equal(t, []string{"t2"}, asked, "Check gets the open stream's credential")
		mu.Unlock()
		synctest.Wait()
		assert.Nil(t, s2.sub.CloseReason())

		// The newest open stream's credential: a third stream with t3,
		// then t2's ends; t3 is what Check gets.
		s3 := serveWith(t, newTestSource(), opts, f, &token{"alice", "t3"}, time.Time{})
		synctest.Wait()
		mu.Lock()
		asked = nil
		mu.Unlock()
		assert.Equal(t, 0, access.Recheck(t.Context(), nil))
		mu.Lock()
		assert.Equal(t, []string{"t3"}, asked, "the newest stream's credential")
		mu.Unlock()
		s3.sub.Close(nil)
		<-s3.done
		mu.Lock()
		asked = nil
		mu.Unlock()
		assert.Equal(t, 0, access.Recheck(t.Context(), nil))
		mu.Lock()
		assert.Equal(t, []string{"t2"}, asked, "the newest still open")
		mu.Unlock()
		s2.sub.Close(nil)
		<-s2.done
		assert.Equal(t, 0, listen.Listens(access))
	})
}

// gate is a Check that blocks the principals named in block until their
// channel is closed (ignoring its context), refuses the ones revoked when
// it began, and counts its calls and how many ran at once.
type gate struct {
	mu      sync.Mutex
	block   map[string]chan struct{}
	revoked map[string]bool
	calls   map[string]int
	running int
	most    int
}

func newGate(blocked ...string) *gate {
	g := &gate{block: map[string]chan struct{}{}, revoked: map[string]bool{}, calls: map[string]int{}}
	for _, u := range blocked {
		g.block[u] = make(chan struct{})
	}
	return g
}

func (g *gate) check(_ context.Context, auth any) error {
	u := auth.(*token).user
	g.mu.Lock()
	g.calls[u]++
	g.running++
	g.most = max(g.most, g.running)
	wait, revoked := g.block[u], g.revoked[u] // as of when it began
	g.mu.Unlock()
	if wait != nil {
		<-wait
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if revoked {
		return listen.ErrRevoked
	}
	return nil
}

func (g *gate) set(f func(g *gate)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

func (g *gate) callsOf(u string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[u]
}

// TestAccessSlowCheckDelaysOnlyItsPrincipal: while one principal's Check
// blocks, the schedule goes on for the others (a revoked principal's
// streams end at the next round), Recheck of another principal answers at
// once, and the blocked principal gets no second Check until its first
// returns.
func TestAccessSlowCheckDelaysOnlyItsPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate("slow")
		access := &listen.Access{Every: time.Minute, Key: byUser, Check: g.check}
		defer access.Close()
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		f := listen.Filter{"toolsListChanged": true}
		slow := serveWith(t, newTestSource(), opts, f, &token{"slow", "s"}, time.Time{})
		bob := serveWith(t, newTestSource(), opts, f, &token{"bob", "b"}, time.Time{})
		alice := serveWith(t, newTestSource(), opts, f, &token{"alice", "a"}, time.Time{})
		time.Sleep(time.Minute)
		synctest.Wait() // the first round: slow's Check blocks
		assert.Equal(t, 1, g.callsOf("slow"))
		assert.Equal(t, 1, g.callsOf("bob"))

		g.set(func(g *gate) { g.revoked["bob"] = true })
		start := time.Now()
		time.Sleep(time.Minute)
		synctest.Wait()
		if assert.NotNil(t, bob.sub.CloseReason(), "bob's stream ends at the next round") {
			assert.ErrorIs(t, <-bob.done, listen.ErrRevoked)
			assert.Equal(t, time.Minute, bob.at.Sub(start), "within one re-check interval")
		}
		assert.Equal(t, 1, g.callsOf("slow"), "no second Check for a principal whose Check is in flight")
		assert.Nil(t, slow.sub.CloseReason())

		g.set(func(g *gate) { g.revoked["alice"] = true })
		assert.Equal(t, 1, access.Recheck(t.Context(), func(auth any) bool { return auth.(*token).user == "alice" }))
		assert.ErrorIs(t, <-alice.done, listen.ErrRevoked)

		close(g.block["slow"])
		synctest.Wait()
		assert.Nil(t, slow.sub.CloseReason(), "its verdict: kept")
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 2, g.callsOf("slow"), "checked again once its Check returned")
		slow.sub.Close(nil)
		<-slow.done
		if bob.sub.CloseReason() == nil { // the old code: end the test cleanly
			bob.sub.Close(nil)
			<-bob.done
		}
	})
}

// TestAccessRecheckWaitsForTheCheckInFlight: Recheck of a principal whose
// (scheduled) Check is in flight waits for it, then checks it again, so
// that the verdict is not one begun before the grant changed; the two
// Checks never run at once.
func TestAccessRecheckWaitsForTheCheckInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate("bob")
		access := &listen.Access{Every: time.Minute, Key: byUser, Check: g.check}
		defer access.Close()
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		bob := serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, &token{"bob", "b"}, time.Time{})
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 1, g.callsOf("bob"))
		first := g.block["bob"]
		g.set(func(g *gate) { g.revoked["bob"], g.block["bob"] = true, nil })
		got := make(chan int)
		go func() { got <- access.Recheck(t.Context(), nil) }()
		synctest.Wait()
		assert.Equal(t, 1, g.callsOf("bob"), "Recheck waits for the Check in flight")
		close(first) // it answers as of when it began: kept
		assert.Equal(t, 1, <-got, "then checks again: revoked")
		assert.ErrorIs(t, <-bob.done, listen.ErrRevoked)
		assert.Equal(t, 2, g.callsOf("bob"))
		assert.Equal(t, 1, g.most, "never two Checks at once")
	})
}

// TestAccessMaxChecks: the Checks of a round run concurrently, at most
// MaxChecks at once; every principal is checked.
func TestAccessMaxChecks(t *testing.T) {
	for _, tc := range []struct {
		max, want int
	}{{2, 2}, {0, 16}} {
		synctest.Test(t, func(t *testing.T) {
			users := make([]string, 16+4)
			for i := range users {
				users[i] = string(rune('a' + i))
			}
			g := newGate(users...)
			access := &listen.Access{Key: byUser, Check: g.check, MaxChecks: tc.max}
			defer access.Close()
			opts := &listen.Options{Capabilities: allCaps, Access: access}
			var all []*served
			for _, u := range users {
				all = append(all, serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, &token{u, u}, time.Time{}))
			}
			synctest.Wait()
			got := make(chan int)
			go func() { got <- access.Recheck(t.Context(), nil) }()
			synctest.Wait()
			g.mu.Lock()
			assert.Equal(t, tc.want, g.running, "MaxChecks %d", tc.max)
			g.mu.Unlock()
			for _, u := range users {
				close(g.block[u])
			}
			assert.Equal(t, 0, <-got)
			for _, u := range users {
				assert.Equal(t, 1, g.callsOf(u))
			}
			assert.Equal(t, tc.want, g.most)
			for _, s := range all {
				s.sub.Close(nil)
				<-s.done
			}
		})
	}
}

// TestAccessCheckContext: a Check's context ends after CheckTimeout (an
// error then ends the streams like any other), when Recheck's context ends
// (the answer is dropped: the streams stay), and at Close (likewise; Close
// waits for the Check to return). After Close nothing is re-checked, but
// End still works.
func TestAccessCheckContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		access := &listen.Access{CheckTimeout: 5 * time.Second, Every: time.Minute, Check: func(ctx context.Context, _ any) error {
			mu.Lock()
			calls++
			mu.Unlock()
			<-ctx.Done()
			return ctx.Err()
		}}
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		f := listen.Filter{"toolsListChanged": true}

		s := serveWith(t, newTestSource(), opts, f, "u", time.Time{})
		synctest.Wait()
		start := time.Now()
		assert.Equal(t, 1, access.Recheck(t.Context(), nil))
		took := time.Since(start)
		assert.True(t, took >= 5*time.Second && took <= 5*time.Second*5/4, "CheckTimeout, to 5/4 of it: %v", took)
		reason := <-s.done
		assert.ErrorIs(t, reason, listen.ErrRevoked)
		assert.ErrorIs(t, reason, context.DeadlineExceeded)

		s = serveWith(t, newTestSource(), opts, f, "u", time.Time{})
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		start = time.Now()
		assert.Equal(t, 0, access.Recheck(ctx, nil))
		cancel()
		assert.Equal(t, time.Second, time.Since(start), "Recheck's context")
		synctest.Wait()
		assert.Nil(t, s.sub.CloseReason(), "an answer after Recheck's context ended is dropped")

		time.Sleep(time.Minute - time.Second) // a scheduled round's Check is in flight
		synctest.Wait()
		mu.Lock()
		before := calls
		mu.Unlock()
		start = time.Now()
		access.Close()
		access.Close()
		assert.Zero(t, time.Since(start), "Close ends the Check's context and waits")
		synctest.Wait()
		assert.Nil(t, s.sub.CloseReason(), "Close ends no stream")
		assert.Equal(t, 0, access.Recheck(t.Context(), nil))
		time.Sleep(time.Hour)
		mu.Lock()
		assert.Equal(t, before, calls, "nothing re-checks after Close")
		mu.Unlock()
		s.sub.End(listen.ErrRevoked)
		assert.ErrorIs(t, <-s.done, listen.ErrRevoked)
	})
}

// TestAccessPrincipalChangesDuringItsCheck: a principal whose streams all
// end while its Check is in flight is forgotten when the Check returns; a
// stream it opens meanwhile joins it (no second Check starts), and the
// verdict of the Check in flight concerns the streams it began with.
func TestAccessPrincipalChangesDuringItsCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate("bob")
		access := &listen.Access{Every: time.Minute, Key: byUser, Check: g.check}
		defer access.Close()
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		f := listen.Filter{"toolsListChanged": true}
		b1 := serveWith(t, newTestSource(), opts, f, &token{"bob", "1"}, time.Time{})
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 1, g.callsOf("bob"))
		b1.sub.Close(nil)
		<-b1.done
		assert.Equal(t, 0, listen.Listens(access))
		assert.Equal(t, 1, listen.Principals(access), "kept while its Check is in flight")

		b2 := serveWith(t, newTestSource(), opts, f, &token{"bob", "2"}, time.Time{})
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 1, g.callsOf("bob"), "no second Check while the first is in flight")
		first := g.block["bob"]
		g.set(func(g *gate) { g.block["bob"] = nil })
		close(first)
		synctest.Wait()
		assert.Nil(t, b2.sub.CloseReason())
		assert.Equal(t, 1, listen.Principals(access))

		// Emptied during its Check: forgotten when the Check returns.
		second := make(chan struct{})
		g.set(func(g *gate) { g.block["bob"] = second })
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 2, g.callsOf("bob"))
		b2.sub.Close(nil)
		<-b2.done
		assert.Equal(t, 1, listen.Principals(access))
		close(second)
		synctest.Wait()
		assert.Equal(t, 0, listen.Principals(access), "forgotten once its Check returned")
	})
}

// TestAccessConcurrentBookkeeping: streams of a few principals open and
// close on several goroutines while rounds (Recheck, the schedule) run
// on others; afterwards the Access tracks nothing, and no principal ever
// had two Checks at once.
func TestAccessConcurrentBookkeeping(t *testing.T) {
	var mu sync.Mutex
	running := map[string]int{}
	twice := false
	access := &listen.Access{
		Every: time.Millisecond, Key: byUser, MaxChecks: 3,
		Check: func(_ context.Context, auth any) error {
			u := auth.(*token).user
			mu.Lock()
			running[u]++
			twice = twice || running[u] > 1
			mu.Unlock()
			runtime.Gosched() // let another Check overlap, if one could
			mu.Lock()
			running[u]--
			mu.Unlock()
			if auth.(*token).id == "revoked" {
				return listen.ErrRevoked
			}
			return nil
		},
	}
	opts := &listen.Options{Capabilities: allCaps, Access: access}
	f := listen.Filter{"toolsListChanged": true}
	users := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					access.Recheck(context.Background(), nil)
				}
			}
		})
	}
	var openers sync.WaitGroup
	for i := range 8 {
		openers.Go(func() {
			for j := range 200 {
				id := "ok"
				if j%7 == 0 {
					id = "revoked"
				}
				req := request(jsonrpc.IntID(int64(j)), f)
				req.Auth = &token{users[(i+j)%len(users)], id}
				sub, err := listen.Open(context.Background(), newTestSource(), req, opts)
				if !assert.NoError(t, err) {
					return
				}
				sub.Close(nil)
			}
		})
	}
	openers.Wait()
	close(stop)
	wg.Wait()
	access.Close()
	assert.Equal(t, 0, listen.Listens(access))
	assert.Equal(t, 0, listen.Principals(access))
	mu.Lock()
	assert.False(t, twice, "two Checks of one principal at once")
	mu.Unlock()
}

// TestAccessCheckTimeoutPerCheck: on one round goroutine (MaxChecks 1),
// Checks that each take most of CheckTimeout are never cut short, and the
// one that blocks has its context ended between CheckTimeout and 5/4 of it
// after it began, whatever came before it; the Checks after it get a live
// context.
func TestAccessCheckTimeoutPerCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var cut []string
		var slowTook time.Duration
		access := &listen.Access{MaxChecks: 1, CheckTimeout: 4 * time.Second, Key: byUser,
			Check: func(ctx context.Context, auth any) error {
				u := auth.(*token).user
				start := time.Now()
				if u == "slow" {
					<-ctx.Done()
					mu.Lock()
					slowTook = time.Since(start)
					mu.Unlock()
					return nil // kept: the answer of a Check past its time
				}
				ok := ctx.Err() == nil
				time.Sleep(3 * time.Second)
				if !ok || ctx.Err() != nil {
					mu.Lock()
					cut = append(cut, u)
					mu.Unlock()
				}
				return nil
			}}
		defer access.Close()
		opts := &listen.Options{Capabilities: allCaps, Access: access}
		var all []*served
		for _, u := range []string{"a", "b", "slow", "c", "d"} {
			all = append(all, serveWith(t, newTestSource(), opts, listen.Filter{"toolsListChanged": true}, &token{u, u}, time.Time{}))
		}
		synctest.Wait()
		for range 3 { // map order varies: slow comes first, last or between
			assert.Equal(t, 0, access.Recheck(t.Context(), nil))
			mu.Lock()
			assert.Empty(t, cut, "a Check within its time is not cut short")
			assert.True(t, slowTook >= 4*time.Second && slowTook <= 5*time.Second, "%v", slowTook)
			mu.Unlock()
		}
		for _, s := range all {
			assert.Nil(t, s.sub.CloseReason())
			s.sub.Close(nil)
			<-s.done
		}
	})
}
