package listen_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
)

// Ownership is a handoff, not a union: once StartWorker is given an owner,
// the context given to Open no longer closes the stream, and the new owner's
// end does. Both orders of ending.
func TestStartWorkerHandsOwnershipOver(t *testing.T) {
	tests := []struct {
		name       string
		openFirst  bool // end the Open context before the worker's owner
		wantCloses int  // closes after the first end
	}{
		{name: "open context ends first: stream stays open", openFirst: true, wantCloses: 0},
		{name: "worker owner ends first: stream closes", openFirst: false, wantCloses: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newTestSource()
				openCtx, endOpen := context.WithCancel(context.Background())
				owner, endOwner := context.WithCancelCause(context.Background())
				defer endOpen()
				defer endOwner(nil)
				sub, err := listen.Open(openCtx, src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}), &listen.Options{Capabilities: allCaps})
				require.NoError(t, err)
				w, err := sub.StartWorker(owner)
				require.NoError(t, err)
				st := src.last()

				if tt.openFirst {
					endOpen()
				} else {
					endOwner(errors.New("connection gone"))
				}
				synctest.Wait()
				assert.Equal(t, tt.wantCloses, st.closeCount())

				// The other end.
				if tt.openFirst {
					assert.NoError(t, sub.CloseReason(), "the Open context no longer owns the stream")
					w.Continue()
					st.emit(listen.ToolsListChanged())
					o := <-w.Outcomes()
					assert.NoError(t, o.Err, "the worker still serves")
					endOwner(errors.New("connection gone"))
				} else {
					endOpen()
				}
				synctest.Wait()
				assert.Equal(t, 1, st.closeCount())
				assert.ErrorIs(t, sub.CloseReason(), listen.ErrOwnerGone)
				waitExited(w)
				sub.Close(nil)
				assert.Equal(t, 1, st.closeCount())
			})
		})
	}
}

// StartWorker given the Open context again keeps it the owner; a nil owner
// is a programming error.
func TestStartWorkerWithTheOpenContextKeepsTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		ctx, cancel := context.WithCancel(context.Background())
		sub, err := listen.Open(ctx, src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
		require.NoError(t, err)
		assert.PanicsWithValue(t, "listen: StartWorker with a nil owner context (pass context.Background() for no owner)",
			func() {
				//lint:ignore SA1012 the nil owner is the misuse under test
				_, _ = sub.StartWorker(nil)
			})
		w, err := sub.StartWorker(ctx)
		require.NoError(t, err)
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, sub.CloseReason(), listen.ErrOwnerGone)
		// The guard's close stops the worker: nothing else has to.
		select {
		case _, open := <-w.Outcomes():
			assert.False(t, open)
		default:
			t.Fatal("the worker is still running after its subscription was closed")
		}
	})
}

// A subscription closed by its owner's end delivers nothing more: the
// owner's loop never sees the graceful end (ErrClosed) of the Next that the close
// released, so it never writes a completion for a lost stream.
func TestNoOutcomeAfterTheOwnerEnded(t *testing.T) {
	for range 200 {
		src := newTestSource()
		ctx, cancel := context.WithCancel(context.Background())
		sub, err := listen.Open(ctx, src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}), &listen.Options{Capabilities: allCaps})
		require.NoError(t, err)
		w, err := sub.StartWorker(ctx)
		require.NoError(t, err)
		w.Continue()
		<-src.nexts // a Next is blocked in the source
		cancel()
		for o := range w.Outcomes() {
			t.Fatalf("outcome %+v delivered after the owner ended", o)
		}
		sub.Close(nil)
		assert.ErrorIs(t, sub.CloseReason(), listen.ErrDisconnected)
	}
}

// The same after an explicit Close while a Next is blocked.
func TestNoOutcomeAfterClose(t *testing.T) {
	for range 200 {
		src := newTestSource()
		sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		w.Continue()
		<-src.nexts
		sub.Close(listen.Cancelled("bye"))
		for o := range w.Outcomes() {
			t.Fatalf("outcome %+v delivered after Close", o)
		}
	}
}

// reentrantStream calls back into its subscription's Close from its own
// Close, as a source that tears everything down in one place does.
type reentrantStream struct {
	sub    func() *listen.Subscription
	closed chan struct{}
}

func (r *reentrantStream) Next() (listen.Event, error) {
	<-r.closed
	return listen.Event{}, listen.ErrClosed
}

func (r *reentrantStream) Close(reason error) {
	close(r.closed)
	r.sub().Close(reason) // nested: must not wait on itself
}

func TestNestedCloseDoesNotDeadlock(t *testing.T) {
	for _, viaOwner := range []bool{false, true} {
		name := map[bool]string{false: "Close", true: "owner end"}[viaOwner]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sub *listen.Subscription
				st := &reentrantStream{sub: func() *listen.Subscription { return sub }, closed: make(chan struct{})}
				src := listentest.SourceFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
					return nil, st, nil
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var err error
				sub, err = listen.Open(ctx, src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
				require.NoError(t, err)
				w, err := sub.StartWorker(ctx)
				require.NoError(t, err)
				w.Continue()
				synctest.Wait() // Next is blocked
				if viaOwner {
					cancel()
					synctest.Wait()
				} else {
					sub.Close(listen.ErrComplete)
				}
				<-sub.Closed()
				sub.Close(nil) // idempotent, and waits for nothing more
				waitExited(w)
				if viaOwner {
					assert.ErrorIs(t, sub.CloseReason(), listen.ErrOwnerGone)
				} else {
					assert.ErrorIs(t, sub.CloseReason(), listen.ErrComplete)
				}
			})
		})
	}
}

// A stopped worker whose goroutine has exited can be replaced; a running
// one cannot, and the error says so.
func TestStartWorkerAfterStop(t *testing.T) {
	src := newTestSource()
	sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	_, err = sub.StartWorker(context.Background())
	assert.ErrorIs(t, err, listen.ErrWorkerRunning)
	w.Stop()
	waitExited(w)

	w2, err := sub.StartWorker(context.Background())
	require.NoError(t, err, "a new worker after the previous one exited")
	w2.Continue()
	src.last().emit(listen.ToolsListChanged())
	o := <-w2.Outcomes()
	assert.NoError(t, o.Err)
	sub.Close(nil)
	waitExited(w2)
}

// An event's Params may carry its _meta as a listen.Filter (a Filter is how
// this package spells a JSON object): it is merged like a map[string]any.
func TestParamsMetaAsFilterIsMerged(t *testing.T) {
	sub := openSub(t, newTestSource(), jsonrpc.IntID(3), listen.Filter{"toolsListChanged": true})
	defer sub.Close(nil)
	msg, err := sub.Notification(listen.ToolsListChanged().WithParams(map[string]any{
		"_meta": listen.Filter{"com.example/trace": "t-1"},
	}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"com.example/trace":"t-1","io.modelcontextprotocol/subscriptionId":3}}}`, string(msg))
}

// Close returns after the worker's goroutine has exited, and the worker
// closes Outcomes as it exits: so once Close has returned, Outcomes is
// closed. Repeated, since the window was a few instructions wide.
func TestCloseReturnsWithOutcomesClosed(t *testing.T) {
	for round := range 2000 {
		sub, err := listen.Open(context.Background(), listentest.NewSource(),
			request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}), &listen.Options{Capabilities: allCaps})
		require.NoError(t, err)
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		sub.Close(nil)
		select {
		case _, open := <-w.Outcomes():
			require.False(t, open, "round %d: Outcomes delivered a value after Close", round)
		default:
			require.Failf(t, "Outcomes still open", "round %d: Close returned before the worker closed Outcomes", round)
		}
	}
}
