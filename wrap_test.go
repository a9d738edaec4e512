package listen_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
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
			synctest.Wait() // Serve has pulled again, found nothing and waits
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

// validatedStream is a pollStream that says its events were validated when
// published (as the hub's do).
type validatedStream struct{ pollStream }

func (*validatedStream) EventsValidated() bool { return true }

var _ core.ValidatedStream = (*validatedStream)(nil)

// An event pulled from a stream whose events were validated when published
// (the hub validates once per Publish) is not validated again by each
// subscription: a list change carrying a URI, which Validate refuses, is
// shaped as it is. From any other stream, it fails the stream. Through
// WrapStream, the wrapped stream's answer holds.
func TestEventsValidatedOncePerPublish(t *testing.T) {
	bad := listen.Event{Kind: listen.KindToolsListChanged, URI: "file:///not/for/a/list/change"}
	require.ErrorIs(t, bad.Validate(), listen.ErrInvalidEvent)
	for _, tt := range []struct {
		name    string
		stream  func() (listen.Stream, *pollStream)
		methods []string
	}{
		{"validated", func() (listen.Stream, *pollStream) { v := &validatedStream{}; return v, &v.pollStream },
			[]string{spec.MethodAcknowledged, spec.MethodToolsListChanged}},
		{"validated, wrapped", func() (listen.Stream, *pollStream) {
			v := &validatedStream{}
			return listen.WrapStream(v, listen.StreamHooks{}), &v.pollStream
		}, []string{spec.MethodAcknowledged, spec.MethodToolsListChanged}},
		{"not validated", func() (listen.Stream, *pollStream) { p := &pollStream{}; return p, p },
			[]string{spec.MethodAcknowledged, "error:Subscription source failed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, inner := tt.stream()
				src := listentest.SourceFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
					return listen.Filter{"toolsListChanged": true}, st, nil
				})
				sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
				col := newCollector()
				done := make(chan error, 1)
				go func() { done <- sub.Serve(t.Context(), col.sink(0)) }()
				<-col.got
				synctest.Wait()
				inner.push(item{ev: bad})
				<-col.got
				sub.Close(nil)
				<-done
				assert.Equal(t, tt.methods, col.methods(t))
				_, err := sub.Notification(bad)
				assert.ErrorIs(t, err, listen.ErrInvalidEvent, "an event given to Notification is always validated")
			})
		})
	}
}

// A wrapper does not claim anything itself: the core looks through it.
func TestWrapStreamClaimsNothing(t *testing.T) {
	for _, inner := range []listen.Stream{&validatedStream{}, &pollStream{}} {
		_, ok := listen.WrapStream(inner, listen.StreamHooks{}).(core.ValidatedStream)
		assert.False(t, ok)
	}
}
