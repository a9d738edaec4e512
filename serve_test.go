package listen_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// collector is a Sink that records every message and keep-alive.
type collector struct {
	mu    sync.Mutex
	msgs  []string
	pings int
	got   chan string
	fail  error
}

func newCollector() *collector { return &collector{got: make(chan string, 64)} }

func (c *collector) sink(keepAlive time.Duration) listen.Sink {
	return listen.Sink{
		Write: func(msg []byte) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.fail != nil {
				return c.fail
			}
			s := string(msg) // Serve reuses msg: copy
			c.msgs = append(c.msgs, s)
			c.got <- s
			return nil
		},
		KeepAlive: keepAlive,
		Ping: func() error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.pings++
			return c.fail
		},
	}
}

func (c *collector) methods(t *testing.T) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		d := decode(t, []byte(m))
		switch {
		case d["method"] != nil:
			out = append(out, d["method"].(string))
		case d["result"] != nil:
			out = append(out, "result:"+d["result"].(map[string]any)["resultType"].(string))
		case d["error"] != nil:
			out = append(out, "error:"+d["error"].(map[string]any)["message"].(string))
		}
	}
	return out
}

type serveRun struct {
	src  *testSource
	sub  *listen.Subscription
	st   *testStream
	col  *collector
	done chan error
}

func startServe(t *testing.T, ctx context.Context, f listen.Filter, keepAlive time.Duration) *serveRun {
	t.Helper()
	r := &serveRun{src: newTestSource(), col: newCollector(), done: make(chan error, 1)}
	r.sub = openSub(t, r.src, jsonrpc.StringID("s1"), f)
	r.st = r.src.last()
	go func() { r.done <- r.sub.Serve(ctx, r.col.sink(keepAlive)) }()
	return r
}

func TestServeWholeStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startServe(t, t.Context(), listen.Filter{"toolsListChanged": true, "resourceSubscriptions": []any{"file:///a"}}, 0)
		<-r.col.got // the ack
		synctest.Wait()
		assert.Len(t, r.src.nexts, 1, "one Next after the ack")

		r.st.emit(listen.PromptsListChanged()) // dropped: not requested
		r.st.emit(listen.ToolsListChanged())
		<-r.col.got
		synctest.Wait()
		assert.Len(t, r.src.nexts, 3, "a drop and a write each get one more Next")

		r.st.emit(listen.ResourceUpdated("file:///a"))
		r.st.complete()
		reason := <-r.done
		assert.Equal(t, listen.ErrComplete, reason)
		assert.Equal(t, []string{
			spec.MethodAcknowledged, spec.MethodToolsListChanged, spec.MethodResourceUpdated, "result:complete",
		}, r.col.methods(t))
		assert.Equal(t, listen.ErrComplete, <-r.st.closes)
		assert.Equal(t, 1, r.st.closeCount())
	})
}

func TestServeEndings(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		end     func(r *serveRun, cancel context.CancelCauseFunc)
		reason  func(t *testing.T, reason error)
		methods []string
	}{
		{"source failure writes the failure", func(r *serveRun, _ context.CancelCauseFunc) { r.st.fail(boom) },
			func(t *testing.T, reason error) {
				assert.ErrorIs(t, reason, boom)
				assert.ErrorIs(t, reason, listen.ErrFailed)
			},
			[]string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{"invalid event writes the failure", func(r *serveRun, _ context.CancelCauseFunc) { r.st.emit(listen.ResourceUpdated("nope")) },
			func(t *testing.T, reason error) { assert.ErrorIs(t, reason, listen.ErrInvalidEvent) },
			[]string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{"shutdown writes the completion", func(_ *serveRun, cancel context.CancelCauseFunc) { cancel(listen.ErrShutdown) },
			func(t *testing.T, reason error) { assert.Equal(t, listen.ErrShutdown, reason) },
			[]string{spec.MethodAcknowledged, "result:complete"}},
		{"shutdown whose completion cannot be written is a disconnect", func(r *serveRun, cancel context.CancelCauseFunc) {
			r.col.mu.Lock()
			r.col.fail = boom
			r.col.mu.Unlock()
			cancel(listen.ErrShutdown)
		}, func(t *testing.T, reason error) {
			assert.ErrorIs(t, reason, listen.ErrDisconnected)
			assert.ErrorIs(t, reason, boom)
		},
			[]string{spec.MethodAcknowledged}},
		{"client cancellation writes nothing", func(_ *serveRun, cancel context.CancelCauseFunc) { cancel(listen.Cancelled("client done")) },
			func(t *testing.T, reason error) {
				require.ErrorIs(t, reason, listen.ErrCancelled)
				assert.EqualError(t, reason, "listen: subscription cancelled: client done")
			},
			[]string{spec.MethodAcknowledged}},
		{"plain context end is a disconnect", func(_ *serveRun, cancel context.CancelCauseFunc) { cancel(nil) },
			func(t *testing.T, reason error) { assert.ErrorIs(t, reason, listen.ErrDisconnected) },
			[]string{spec.MethodAcknowledged}},
		{"failed write is a disconnect", func(r *serveRun, _ context.CancelCauseFunc) {
			r.col.mu.Lock()
			r.col.fail = boom
			r.col.mu.Unlock()
			r.st.emit(listen.ToolsListChanged())
		}, func(t *testing.T, reason error) {
			assert.ErrorIs(t, reason, listen.ErrDisconnected)
			assert.ErrorIs(t, reason, boom)
		},
			[]string{spec.MethodAcknowledged}},
		{"an external Close ends Serve silently", func(r *serveRun, _ context.CancelCauseFunc) { r.sub.Close(listen.Cancelled("")) },
			func(t *testing.T, reason error) { assert.ErrorIs(t, reason, listen.ErrCancelled) },
			[]string{spec.MethodAcknowledged}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				r := startServe(t, ctx, listen.Filter{"toolsListChanged": true}, 0)
				<-r.col.got
				synctest.Wait() // the first Next is blocked in the source
				tt.end(r, cancel)
				reason := <-r.done
				tt.reason(t, reason)
				assert.Equal(t, tt.methods, r.col.methods(t))
				assert.Equal(t, reason, <-r.st.closes)
				assert.Equal(t, 1, r.st.closeCount())
			})
		})
	}
}

func TestServeKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startServe(t, t.Context(), listen.Filter{"toolsListChanged": true}, 15*time.Second)
		<-r.col.got
		time.Sleep(45*time.Second + time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		r.col.mu.Lock()
		assert.Equal(t, 3, r.col.pings)
		r.col.fail = errors.New("gone")
		r.col.mu.Unlock()
		time.Sleep(15 * time.Second)
		reason := <-r.done
		assert.ErrorIs(t, reason, listen.ErrDisconnected, "a failed keep-alive is a disconnect")
	})
}

func TestServeOwnerEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner, cancel := context.WithCancel(t.Context())
		src, col := newTestSource(), newCollector()
		sub, err := listen.Open(owner, src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- sub.Serve(context.Background(), col.sink(0)) }()
		<-col.got
		cancel()
		reason := <-done
		assert.ErrorIs(t, reason, listen.ErrOwnerGone)
		assert.Equal(t, []string{spec.MethodAcknowledged}, col.methods(t), "nothing written after the owner went away")
	})
}

func TestServeWithAnEndedContext(t *testing.T) {
	tests := []struct {
		name    string
		cause   error
		methods []string
		class   string
	}{
		{"cancelled before the stream started writes nothing", listen.Cancelled("bye"), nil, "cancelled"},
		{"a drain before the stream started still acknowledges first", listen.ErrShutdown, []string{spec.MethodAcknowledged, "result:complete"}, "shutdown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			cancel(tt.cause)
			src, col := newTestSource(), newCollector()
			sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
			reason := sub.Serve(ctx, col.sink(0))
			assert.Equal(t, tt.class, listen.Classify(reason))
			assert.Equal(t, tt.methods, col.methods(t))
			assert.Empty(t, src.nexts, "no Next for a stream that never started")
		})
	}
}

// The end of the serving context wins over an outcome that is ready at the
// same moment: nothing is written after the transport decided to end.
func TestServeContextEndWinsOverAReadyOutcome(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			r := startServe(t, ctx, listen.Filter{"toolsListChanged": true}, 0)
			<-r.col.got
			synctest.Wait()
			// Cancel while the event is being pulled: the outcome and the
			// cancellation are ready together.
			cancel(listen.Cancelled("client done"))
			r.st.emit(listen.ToolsListChanged())
			reason := <-r.done
			require.ErrorIs(t, reason, listen.ErrCancelled)
			assert.NotErrorIs(t, reason, listen.ErrDisconnected)
			assert.Equal(t, []string{spec.MethodAcknowledged}, r.col.methods(t))
		})
	}
}

// Serve writes the terminal message through Final, with the server's own
// reason for ending the stream (a drain, an early ending, from End, the
// serving context's cause or the source's Next), and nil for an end that
// is not the server's.
func TestServeWritesTerminalMessagesThroughFinal(t *testing.T) {
	revokedWhy := fmt.Errorf("%w: token withdrawn", listen.ErrRevoked)
	for _, tt := range []struct {
		name  string
		end   func(sub *listen.Subscription, st *testStream, cancel context.CancelCauseFunc)
		ended error
		final string
	}{
		{"the source's completion", func(_ *listen.Subscription, st *testStream, _ context.CancelCauseFunc) { st.complete() },
			nil, `"resultType":"complete"`},
		{"the source's failure", func(_ *listen.Subscription, st *testStream, _ context.CancelCauseFunc) { st.fail(errors.New("boom")) },
			nil, `"Subscription source failed"`},
		{"End with an early ending", func(sub *listen.Subscription, _ *testStream, _ context.CancelCauseFunc) { sub.End(revokedWhy) },
			revokedWhy, `"revoked"`},
		{"a drain, as the serving context's cause", func(_ *listen.Subscription, _ *testStream, cancel context.CancelCauseFunc) {
			cancel(listen.ErrShutdown)
		},
			listen.ErrShutdown, `"resultType":"complete"`},
		{"an early ending from the source's Next", func(_ *listen.Subscription, st *testStream, _ context.CancelCauseFunc) { st.fail(listen.ErrFellBehind) },
			listen.ErrFellBehind, `"fell_behind"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, col := newTestSource(), newCollector()
				sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
				var final []string
				var ended []error
				sink := col.sink(0)
				sink.Final = func(msg []byte, why error) error {
					final, ended = append(final, string(msg)), append(ended, why)
					return nil
				}
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				done := make(chan error, 1)
				go func() { done <- sub.Serve(ctx, sink) }()
				<-col.got
				st := src.last()
				st.emit(listen.ToolsListChanged())
				<-col.got
				tt.end(sub, st, cancel)
				<-done
				require.Len(t, final, 1)
				assert.Contains(t, final[0], tt.final)
				assert.Equal(t, []error{tt.ended}, ended)
				assert.Equal(t, []string{spec.MethodAcknowledged, spec.MethodToolsListChanged}, col.methods(t))
			})
		})
	}
}

// pollStream is a NotifyStream fed by push: TryNext never blocks, and the
// function given to SetNotify is called after each push and on Close.
type pollStream struct {
	mu     sync.Mutex
	items  []item
	closed bool
	wake   func()
	tries  int
	closes []error
	panics bool
}

func (p *pollStream) Open(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
	return listen.Filter{"toolsListChanged": true}, p, nil
}

func (p *pollStream) Next() (listen.Event, error) {
	panic("Serve must not call Next on a NotifyStream")
}

func (p *pollStream) TryNext() (listen.Event, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tries++
	if p.panics {
		panic("try")
	}
	if len(p.items) > 0 {
		it := p.items[0]
		p.items = p.items[1:]
		return it.ev, true, it.err
	}
	if p.closed {
		return listen.Event{}, true, listen.ErrClosed
	}
	return listen.Event{}, false, nil
}

func (p *pollStream) SetNotify(f func()) {
	p.mu.Lock()
	p.wake = f
	p.mu.Unlock()
}

func (p *pollStream) notifyNow() {
	p.mu.Lock()
	f := p.wake
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

func (p *pollStream) push(it item) {
	p.mu.Lock()
	p.items = append(p.items, it)
	p.mu.Unlock()
	p.notifyNow()
}

func (p *pollStream) Close(reason error) {
	p.mu.Lock()
	p.closed = true
	p.closes = append(p.closes, reason)
	p.mu.Unlock()
	p.notifyNow()
}

var _ listen.NotifyStream = (*pollStream)(nil)

func TestServeNotifyStreamWithoutAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pollStream{}
		sub := openSub(t, p, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		col := newCollector()
		done := make(chan error, 1)
		go func() { done <- sub.Serve(t.Context(), col.sink(0)) }()
		<-col.got
		synctest.Wait()
		p.mu.Lock()
		assert.Equal(t, 1, p.tries, "one pull after the ack")
		p.mu.Unlock()
		p.push(item{ev: listen.PromptsListChanged()}) // dropped
		p.push(item{ev: listen.ToolsListChanged()})
		<-col.got
		p.push(item{err: listen.ErrClosed})
		assert.Equal(t, listen.ErrComplete, <-done)
		assert.Equal(t, []string{spec.MethodAcknowledged, spec.MethodToolsListChanged, "result:complete"}, col.methods(t))
		assert.Equal(t, []error{listen.ErrComplete}, p.closes)
	})
}

func TestServeNotifyStreamEndings(t *testing.T) {
	tests := []struct {
		name    string
		end     func(p *pollStream, sub *listen.Subscription, cancel context.CancelCauseFunc)
		class   string
		methods []string
	}{
		{"failure", func(p *pollStream, _ *listen.Subscription, _ context.CancelCauseFunc) {
			p.push(item{err: errors.New("x")})
		},
			"error", []string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{"panic in TryNext", func(p *pollStream, _ *listen.Subscription, _ context.CancelCauseFunc) {
			p.mu.Lock()
			p.panics = true
			p.mu.Unlock()
			p.push(item{})
		}, "error", []string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{"cancellation", func(_ *pollStream, _ *listen.Subscription, cancel context.CancelCauseFunc) {
			cancel(listen.Cancelled(""))
		},
			"cancelled", []string{spec.MethodAcknowledged}},
		{"drain", func(_ *pollStream, _ *listen.Subscription, cancel context.CancelCauseFunc) {
			cancel(listen.ErrShutdown)
		},
			"shutdown", []string{spec.MethodAcknowledged, "result:complete"}},
		{"external close", func(_ *pollStream, sub *listen.Subscription, _ context.CancelCauseFunc) {
			sub.Close(listen.Disconnected(nil))
		},
			"disconnected", []string{spec.MethodAcknowledged}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				p := &pollStream{}
				sub := openSub(t, p, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
				col := newCollector()
				done := make(chan error, 1)
				go func() { done <- sub.Serve(ctx, col.sink(0)) }()
				<-col.got
				synctest.Wait()
				tt.end(p, sub, cancel)
				reason := <-done
				assert.Equal(t, tt.class, listen.Classify(reason))
				assert.Equal(t, tt.methods, col.methods(t))
				p.mu.Lock()
				assert.Len(t, p.closes, 1, "closed exactly once")
				p.mu.Unlock()
			})
		})
	}
}

// A failed write closes the stream as Disconnected(err), unless the error
// already says why the client side ended (a transport's write abandoned
// for the client's cancellation, or an already classified disconnection):
// that reason is kept as it is.
func TestServeWriteErrorReason(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		want   string
		cancel bool
	}{
		{"socket error", errors.New("broken pipe"), "listen: client disconnected: broken pipe", false},
		{"client cancellation", listen.Cancelled("stop"), "listen: subscription cancelled: stop", true},
		{"disconnection", listen.Disconnected(errors.New("reset")), "listen: client disconnected: reset", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := startServe(t, t.Context(), listen.Filter{"toolsListChanged": true}, 0)
				<-r.col.got // the ack
				r.col.mu.Lock()
				r.col.fail = tt.err
				r.col.mu.Unlock()
				r.st.emit(listen.ToolsListChanged())
				reason := <-r.done
				assert.EqualError(t, reason, tt.want)
				assert.Equal(t, tt.cancel, errors.Is(reason, listen.ErrCancelled))
				assert.Equal(t, !tt.cancel, errors.Is(reason, listen.ErrDisconnected))
			})
		})
	}
}
