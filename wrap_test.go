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

// hookLog records the calls of StreamHooks.
type hookLog struct{ calls []string }

func (h *hookLog) hooks() listen.StreamHooks {
	return listen.StreamHooks{
		Pull:  func() { h.calls = append(h.calls, "pull") },
		Event: func(ev listen.Event) { h.calls = append(h.calls, "event:"+ev.Kind.String()) },
		Close: func(reason error) { h.calls = append(h.calls, "close:"+listen.Classify(reason)) },
	}
}

// A wrapped stream is what the inner one is: a NotifyStream stays one (and
// is served without a worker goroutine), a plain Stream stays plain; the
// hooks see every pull, every event and the close, in order.
func TestWrapStreamKeepsTheStreamsAbilities(t *testing.T) {
	t.Run("NotifyStream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			inner := &pollStream{}
			var log hookLog
			wrapped := listen.WrapStream(inner, log.hooks())
			_, ok := wrapped.(listen.NotifyStream)
			require.True(t, ok, "a wrapped NotifyStream is a NotifyStream")
			src := listentest.SourceFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
				return listen.Filter{"toolsListChanged": true}, wrapped, nil
			})
			sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
			col := newCollector()
			done := make(chan error, 1)
			go func() { done <- sub.Serve(t.Context(), col.sink(0)) }()
			<-col.got // the acknowledgement
			synctest.Wait()
			inner.push(item{ev: listen.ToolsListChanged()})
			<-col.got
			inner.push(item{err: listen.ErrClosed})
			assert.Equal(t, listen.ErrComplete, <-done)
			assert.Equal(t, []string{"pull", "pull", "event:tools_list_changed", "pull", "pull", "close:complete"}, log.calls,
				"a TryNext that finds nothing is a pull without an event")
		})
	})
	t.Run("Stream", func(t *testing.T) {
		src := newTestSource()
		var log hookLog
		wrappedSrc := listentest.SourceFunc(func(ctx context.Context, req *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
			acc, st, err := src.Open(ctx, req, f)
			w := listen.WrapStream(st, log.hooks())
			_, ok := w.(listen.NotifyStream)
			assert.False(t, ok, "a wrapped Stream is not a NotifyStream")
			return acc, w, err
		})
		sub := openSub(t, wrappedSrc, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		col := newCollector()
		done := make(chan error, 1)
		go func() { done <- sub.Serve(context.Background(), col.sink(0)) }()
		<-col.got
		src.last().emit(listen.ToolsListChanged())
		<-col.got
		src.last().complete()
		assert.Equal(t, listen.ErrComplete, <-done)
		assert.Equal(t, []string{"pull", "event:tools_list_changed", "pull", "close:complete"}, log.calls)
	})
	t.Run("nil", func(t *testing.T) {
		assert.Nil(t, listen.WrapStream(nil, listen.StreamHooks{}))
	})
}

// The Close hook runs even when the inner Close panics (the panic goes on
// to the guard, which recovers it).
func TestWrapStreamCloseHookAfterAPanic(t *testing.T) {
	released := false
	st := listen.WrapStream(panickyClose{}, listen.StreamHooks{Close: func(error) { released = true }})
	assert.Panics(t, func() { st.Close(errors.New("x")) })
	assert.True(t, released)
}

type panickyClose struct{ listen.Stream }

func (panickyClose) Close(error) { panic("close") }
