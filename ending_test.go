package listen_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// TestEndingWireForms checks the terminal message of each early ending in
// both forms, for each way a stream is ended early: Subscription.End, the
// serving context's cause, and the source's Next.
func TestEndingWireForms(t *testing.T) {
	reasons := []struct {
		err   error
		class string
		msg   string
	}{
		{listen.ErrRevoked, "revoked", "Subscription ended: access revoked"},
		{listen.ErrExpired, "expired", "Subscription ended: credential expired"},
		{listen.ErrFellBehind, "fell_behind", "Subscription ended: client fell behind"},
		{listen.ErrLifetime, "lifetime", ""}, // always the completion
	}
	ways := []struct {
		name string
		end  func(r *serveRun, cancel context.CancelCauseFunc, reason error)
	}{
		{"End", func(r *serveRun, _ context.CancelCauseFunc, reason error) { r.sub.End(reason) }},
		{"context cause", func(_ *serveRun, cancel context.CancelCauseFunc, reason error) { cancel(reason) }},
		{"source Next", func(r *serveRun, _ context.CancelCauseFunc, reason error) { r.st.fail(reason) }},
	}
	for _, withError := range []bool{false, true} {
		for _, rs := range reasons {
			for _, way := range ways {
				name := fmt.Sprintf("error=%v/%s/%s", withError, rs.class, way.name)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						ctx, cancel := context.WithCancelCause(t.Context())
						defer cancel(nil)
						r := startServeWith(t, ctx, &listen.Options{Capabilities: allCaps, EndWithError: withError})
						<-r.col.got // the ack
						synctest.Wait()
						wrapped := fmt.Errorf("%w: for the test", rs.err)
						way.end(r, cancel, wrapped)
						reason := <-r.done
						assert.ErrorIs(t, reason, rs.err)
						assert.NotErrorIs(t, reason, listen.ErrFailed)
						assert.Equal(t, rs.class, listen.Classify(reason))

						r.col.mu.Lock()
						last := r.col.msgs[len(r.col.msgs)-1]
						r.col.mu.Unlock()
						m := decode(t, []byte(last))
						assert.Equal(t, "s1", m["id"])
						if withError && rs.msg != "" {
							e := m["error"].(map[string]any)
							assert.EqualValues(t, spec.CodeEnded, e["code"])
							assert.Equal(t, rs.msg, e["message"])
							assert.Equal(t, map[string]any{"reason": rs.class}, e["data"])
							assert.Nil(t, m["result"])
						} else {
							res := m["result"].(map[string]any)
							assert.Equal(t, "complete", res["resultType"])
							meta := res["_meta"].(map[string]any)
							assert.Equal(t, rs.class, meta[spec.MetaEndReason])
							assert.Equal(t, "s1", meta[spec.MetaSubscriptionID])
						}
					})
				})
			}
		}
	}
}

// startServeWith is startServe with Options of the test's own.
func startServeWith(t *testing.T, ctx context.Context, opts *listen.Options) *serveRun {
	t.Helper()
	r := &serveRun{src: newTestSource(), col: newCollector(), done: make(chan error, 1)}
	sub, err := listen.Open(context.Background(), r.src, request(jsonrpc.StringID("s1"), listen.Filter{"toolsListChanged": true}), opts)
	require.NoError(t, err)
	r.sub = sub
	r.st = r.src.last()
	go func() { r.done <- r.sub.Serve(ctx, r.col.sink(0)) }()
	return r
}

// TestEndBeforeServe: a subscription ended before it is served is
// acknowledged, then ended.
func TestEndBeforeServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		sub := openSub(t, src, jsonrpc.IntID(7), listen.Filter{"toolsListChanged": true})
		sub.End(listen.ErrRevoked)
		sub.End(listen.ErrExpired) // the first End wins
		col := newCollector()
		reason := sub.Serve(t.Context(), col.sink(0))
		assert.Equal(t, listen.ErrRevoked, reason)
		assert.Equal(t, []string{spec.MethodAcknowledged, "result:complete"}, col.methods(t))
	})
}

// TestEndWakesANotifyStream: End reaches a stream served without a worker
// (the path of the hub's streams), which is waiting for its source.
func TestEndWakesANotifyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pollStream{}
		sub := openSub(t, p, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		col := newCollector()
		done := make(chan error, 1)
		go func() { done <- sub.Serve(t.Context(), col.sink(0)) }()
		<-col.got
		synctest.Wait()
		sub.End(listen.ErrFellBehind)
		assert.Equal(t, listen.ErrFellBehind, <-done)
		assert.Equal(t, []string{spec.MethodAcknowledged, "result:complete"}, col.methods(t))
	})
}

// TestEndWithOtherReasons: End with ErrShutdown completes as a drain does;
// any other reason is a failure; End after the close does nothing.
func TestEndWithOtherReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startServe(t, t.Context(), listen.Filter{"toolsListChanged": true}, 0)
		<-r.col.got
		r.sub.End(listen.ErrShutdown)
		assert.Equal(t, listen.ErrShutdown, <-r.done)
		assert.Equal(t, []string{spec.MethodAcknowledged, "result:complete"}, r.col.methods(t))

		boom := errors.New("boom")
		r = startServe(t, t.Context(), listen.Filter{"toolsListChanged": true}, 0)
		<-r.col.got
		r.sub.End(boom)
		reason := <-r.done
		assert.ErrorIs(t, reason, listen.ErrFailed)
		assert.ErrorIs(t, reason, boom)
		assert.Equal(t, []string{spec.MethodAcknowledged, "error:Subscription source failed"}, r.col.methods(t))

		r.sub.End(listen.ErrRevoked) // closed: nothing happens
		assert.ErrorIs(t, r.sub.CloseReason(), boom)
	})
}

func TestEarlyEndingClasses(t *testing.T) {
	for r, want := range map[error]string{
		listen.ErrRevoked: "revoked", fmt.Errorf("x: %w", listen.ErrRevoked): "revoked", listen.ErrExpired: "expired",
		listen.ErrLifetime: "lifetime", listen.ErrFellBehind: "fell_behind", listen.ErrShutdown: "shutdown",
		fmt.Errorf("drained: %w", listen.ErrShutdown): "shutdown", nil: "other", errors.New("who knows"): "other",
	} {
		assert.Equal(t, want, listen.Classify(r), "%v", r)
	}
}
