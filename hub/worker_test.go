package hub_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

var toolsOnly = listen.Filter{spec.KeyToolsListChanged: true}

func requireDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatalf("%s: not done", what)
	}
}

// requireExited fails unless w's goroutine has exited: its Outcomes is
// closed (after any outcome still in it).
func requireExited(t *testing.T, w *listen.Worker) {
	t.Helper()
	for {
		select {
		case _, open := <-w.Outcomes():
			if !open {
				return
			}
		default:
			t.Fatal("worker: still running")
		}
	}
}

// Checklist 8: when the owner goes away (the owner context of listen.Open
// is cancelled), the source is closed exactly once with a Disconnected
// reason whose cause matches ErrOwnerGone, and the worker exits.
func TestOwnerExitClosesSourceExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := newHub(t, withHooks(hub.Options{}, rec))
		owner, kill := context.WithCancelCause(context.Background())
		sub, err := listen.Open(owner, h, listenRequest("owned", toolsOnly, false), serverOptions(nil))
		require.NoError(t, err)
		// The same context also owns the worker: two watches, one close.
		w, err := sub.StartWorker(owner)
		require.NoError(t, err)
		w.Continue()
		synctest.Wait() // the worker is blocked in the hub's Next
		require.Equal(t, 1, h.Stats().Subscriptions)

		killed := errors.New("killed")
		kill(killed)
		synctest.Wait()

		requireExited(t, w)
		requireDone(t, sub.Closed(), "subscription")
		closes := rec.closeInfos()
		require.Len(t, closes, 1, "the source is closed exactly once")
		assert.Equal(t, "disconnected", closes[0].Reason)
		assert.ErrorIs(t, closes[0].Err, listen.ErrDisconnected)
		assert.ErrorIs(t, closes[0].Err, listen.ErrOwnerGone)
		assert.ErrorIs(t, closes[0].Err, killed)
		assert.ErrorIs(t, sub.CloseReason(), listen.ErrOwnerGone)
		assert.Equal(t, 0, h.Stats().Subscriptions)

		sub.Close(listen.ErrComplete) // a later close does nothing
		assert.Len(t, rec.closeInfos(), 1)
	})
}

// Checklist 9: the owner closes, then stops the worker: the source sees
// exactly one close, and the worker exits.
func TestCloseThenStopGivesExactlyOneClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := newHub(t, withHooks(hub.Options{}, rec))
		owner, cancel := context.WithCancel(context.Background())
		sub, err := listen.Open(owner, h, listenRequest("l", toolsOnly, false), serverOptions(nil))
		require.NoError(t, err)
		w, err := sub.StartWorker(owner)
		require.NoError(t, err)
		w.Continue()
		synctest.Wait()

		sub.Close(listen.ErrComplete) // releases the blocked Next
		w.Stop()
		synctest.Wait()
		requireExited(t, w)
		cancel() // the owner going away later closes nothing
		synctest.Wait()

		closes := rec.closeInfos()
		require.Len(t, closes, 1)
		assert.Equal(t, "complete", closes[0].Reason)
		assert.Equal(t, 0, h.Stats().Subscriptions)
	})
}

// Checklist 10: a worker started after the handle was closed gets
// the graceful end (ErrClosed) from its first pull, and the hub keeps working.
func TestWorkerStartedAfterCloseGetsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sub, err := listen.Open(ctx, h, listenRequest("l", toolsOnly, false), serverOptions(nil))
		require.NoError(t, err)
		sub.Close(listen.ErrComplete)

		w, err := sub.StartWorker(ctx)
		require.NoError(t, err)
		w.Continue()
		o := <-w.Outcomes()
		assert.Equal(t, listen.ErrClosed, o.Err)
		w.Stop()
		synctest.Wait()
		requireExited(t, w)

		// The hub survives: a new subscription opens and receives.
		s := openStream(t, h, "again", toolsOnly)
		assert.Equal(t, 1, h.ToolsListChanged().Matched)
		assert.Equal(t, listen.KindToolsListChanged, mustNext(t, s).Kind)
		s.Close(nil)
	})
}

// sink records what Serve writes.
type sink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sink) Sink() listen.Sink {
	return listen.Sink{Write: func(msg []byte) error {
		s.mu.Lock()
		s.msgs = append(s.msgs, string(msg))
		s.mu.Unlock()
		return nil
	}}
}

func (s *sink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.msgs
	s.msgs = nil
	return out
}

// End to end: subscriptions opened with listen.Open on the hub and served
// with Serve get the ack (the hub accepts extension keys verbatim), exactly
// the notifications their filter selects, and the completion on Complete.
func TestServeEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		opts := serverOptions(tasksRegistry(t))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		type served struct {
			sink   *sink
			reason chan error
		}
		open := func(id string, f listen.Filter) *served {
			sub, err := listen.Open(ctx, h, listenRequest(id, f, true), opts)
			require.NoError(t, err)
			s := &served{sink: &sink{}, reason: make(chan error, 1)}
			go func() { s.reason <- sub.Serve(ctx, s.sink.Sink()) }()
			return s
		}
		a := open("a", listen.Filter{spec.KeyToolsListChanged: true, "taskIds": []any{"t1"}})
		b := open("b", listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///b"}})
		synctest.Wait()
		assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"},"notifications":{"taskIds":["t1"],"toolsListChanged":true}}}`}, a.sink.take())
		assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"b"},"notifications":{"resourceSubscriptions":["file:///b"]}}}`}, b.sink.take())

		assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, h.ToolsListChanged())
		r, err := h.ResourceUpdated("file:///b")
		require.NoError(t, err)
		assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, r)
		r, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}}, "t1"))
		require.NoError(t, err)
		assert.Equal(t, 1, r.Matched)
		synctest.Wait()
		assert.Equal(t, []string{
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"},"taskId":"t1"}}`,
		}, a.sink.take())
		assert.Equal(t, []string{
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"b"},"uri":"file:///b"}}`,
		}, b.sink.take())

		h.Complete()
		synctest.Wait()
		for _, s := range []*served{a, b} {
			assert.ErrorIs(t, <-s.reason, listen.ErrComplete)
			msgs := s.sink.take()
			require.Len(t, msgs, 1)
			assert.True(t, strings.Contains(msgs[0], `"resultType":"complete"`), msgs[0])
		}
		assert.Equal(t, hub.Stats{MaxBuffer: 100}, h.Stats())
	})
}
