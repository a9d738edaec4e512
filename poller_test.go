package listen_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/fastpath"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// notifyStream is a pollStream whose notify calls are counted.
type notifyStream struct {
	pollStream
	notified atomic.Int32
}

func newNotifyStream() *notifyStream { return &notifyStream{} }

var _ listen.NotifyStream = (*notifyStream)(nil)

// polled is a subscription served by its state machine as the fast path
// serves it (fastpath.Attach), with what it wrote.
type polled struct {
	st    *notifyStream
	sub   *listen.Subscription
	p     fastpath.Poller
	cause atomic.Pointer[error]
	msgs  []string
}

func newPolled(t *testing.T) *polled {
	t.Helper()
	r := &polled{st: newNotifyStream()}
	src := listentest.SourceFunc(func(_ context.Context, _ *listen.Request, _ listen.Filter) (listen.Filter, listen.Stream, error) {
		return listen.Filter{"toolsListChanged": true}, r.st, nil
	})
	r.sub = openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	var ok bool
	r.p, ok = fastpath.Attach(r.sub, func() { r.st.notified.Add(1) }, fastpath.EndFunc(func() error {
		if c := r.cause.Load(); c != nil {
			return *c
		}
		return nil
	}))
	require.True(t, ok)
	return r
}

// run takes steps until the Poller waits or is done, writing with write
// (nil: every write succeeds), and returns the last step.
func (r *polled) run(t *testing.T, write func(msg []byte) error) fastpath.Step {
	t.Helper()
	var buf []byte
	for range 100 {
		step, msg := r.p.Next(buf[:0])
		buf = msg
		switch step {
		case fastpath.StepWrite:
			var err error
			if write != nil {
				err = write(msg)
			}
			if err == nil {
				r.msgs = append(r.msgs, string(msg))
			}
			r.p.Written(err)
		default:
			return step
		}
	}
	t.Fatal("the Poller never waited")
	return 0
}

func (r *polled) methods(t *testing.T) []string {
	c := &collector{msgs: r.msgs}
	return c.methods(t)
}

func (r *polled) end(cause error) { r.cause.Store(&cause) }

func TestPollerWholeStream(t *testing.T) {
	r := newPolled(t)
	assert.Equal(t, fastpath.StepWait, r.run(t, nil))
	assert.Equal(t, []string{spec.MethodAcknowledged}, r.methods(t), "the acknowledgement first")
	assert.Equal(t, 1, r.st.tries, "one pull after the acknowledgement")

	r.st.push(item{ev: listen.PromptsListChanged()}) // dropped
	r.st.push(item{ev: listen.ToolsListChanged()})
	assert.EqualValues(t, 2, r.st.notified.Load(), "the stream called notify")
	assert.Equal(t, fastpath.StepWait, r.run(t, nil))
	assert.Equal(t, 4, r.st.tries, "a drop and a write each get one more pull")

	r.st.push(item{err: listen.ErrClosed})
	assert.Equal(t, fastpath.StepDone, r.run(t, nil))
	assert.Equal(t, []string{spec.MethodAcknowledged, spec.MethodToolsListChanged, "result:complete"}, r.methods(t))
	assert.Equal(t, listen.ErrComplete, r.sub.CloseReason())
	assert.Equal(t, []error{listen.ErrComplete}, r.st.closes, "closed once")
	step, msg := r.p.Next([]byte("x"))
	assert.Equal(t, fastpath.StepDone, step, "done stays done")
	assert.Equal(t, "x", string(msg), "dst is returned unchanged")
}

func TestPollerEndings(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// before, if set, ends the stream before the first step.
		before  bool
		end     func(r *polled)
		write   func(msg []byte) error
		class   string
		is      error
		methods []string
	}{
		{name: "source failure", end: func(r *polled) { r.st.push(item{err: boom}) },
			class: "error", is: boom, methods: []string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{name: "invalid event", end: func(r *polled) {
			r.st.push(item{ev: listen.Event{Kind: listen.KindResourceUpdated, URI: "not absolute"}})
		},
			class: "error", is: listen.ErrInvalidEvent, methods: []string{spec.MethodAcknowledged, "error:Subscription source failed"}},
		{name: "cancellation", end: func(r *polled) { r.end(listen.Cancelled("done")) },
			class: "cancelled", methods: []string{spec.MethodAcknowledged}},
		{name: "disconnect", end: func(r *polled) { r.end(listen.Disconnected(boom)) },
			class: "disconnected", is: boom, methods: []string{spec.MethodAcknowledged}},
		{name: "other cause", end: func(r *polled) { r.end(boom) },
			class: "disconnected", is: boom, methods: []string{spec.MethodAcknowledged}},
		{name: "drain", end: func(r *polled) { r.end(listen.ErrShutdown) },
			class: "shutdown", is: listen.ErrShutdown, methods: []string{spec.MethodAcknowledged, "result:complete"}},
		{name: "drain before the start", before: true, end: func(r *polled) { r.end(listen.ErrShutdown) },
			class: "shutdown", is: listen.ErrShutdown, methods: []string{spec.MethodAcknowledged, "result:complete"}},
		{name: "cancelled before the start", before: true, end: func(r *polled) { r.end(listen.Cancelled("")) },
			class: "cancelled", methods: nil},
		{name: "external close", end: func(r *polled) { r.sub.Close(listen.Disconnected(nil)) },
			class: "disconnected", methods: []string{spec.MethodAcknowledged}},
		{name: "failed write", end: func(r *polled) { r.st.push(item{ev: listen.ToolsListChanged()}) },
			write: failOn(spec.MethodToolsListChanged, boom),
			class: "disconnected", is: boom, methods: []string{spec.MethodAcknowledged}},
		{name: "failed completion write", end: func(r *polled) { r.st.push(item{err: listen.ErrClosed}) },
			write: failOn(`"complete"`, boom),
			class: "disconnected", is: boom, methods: []string{spec.MethodAcknowledged}},
		{name: "failed failure write", end: func(r *polled) { r.st.push(item{err: errors.New("x")}) },
			write: failOn(`"error"`, boom),
			class: "error", methods: []string{spec.MethodAcknowledged}},
		{name: "failed drain write", end: func(r *polled) { r.end(listen.ErrShutdown) },
			write: failOn(`"complete"`, boom),
			class: "disconnected", is: boom, methods: []string{spec.MethodAcknowledged}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newPolled(t)
			if tt.before {
				tt.end(r)
			} else {
				require.Equal(t, fastpath.StepWait, r.run(t, tt.write))
				tt.end(r)
			}
			require.Equal(t, fastpath.StepDone, r.run(t, tt.write))
			reason := r.sub.CloseReason()
			assert.Equal(t, tt.class, listen.Classify(reason), "reason %v", reason)
			if tt.is != nil {
				assert.ErrorIs(t, reason, tt.is)
			}
			assert.Equal(t, tt.methods, r.methods(t))
			assert.Len(t, r.st.closes, 1, "closed exactly once")
		})
	}
}

// failOn fails the write of a message containing substr.
func failOn(substr string, err error) func([]byte) error {
	return func(msg []byte) error {
		if strings.Contains(string(msg), substr) {
			return err
		}
		return nil
	}
}

// The end of the transport's side wins over an outcome ready at the same
// moment, as in Serve.
func TestPollerEndWinsOverAReadyOutcome(t *testing.T) {
	r := newPolled(t)
	require.Equal(t, fastpath.StepWait, r.run(t, nil))
	r.st.push(item{ev: listen.ToolsListChanged()})
	r.end(listen.Cancelled(""))
	require.Equal(t, fastpath.StepDone, r.run(t, nil))
	assert.Equal(t, []string{spec.MethodAcknowledged}, r.methods(t))
	assert.Equal(t, "cancelled", listen.Classify(r.sub.CloseReason()))
}

// A stream that blocks is served by Serve: Attach refuses it.
func TestPollerNeedsANotifyStream(t *testing.T) {
	src := newTestSource()
	sub2 := openSub(t, src, jsonrpc.IntID(2), listen.Filter{"toolsListChanged": true})
	defer sub2.Close(nil)
	_, ok := fastpath.Attach(sub2, func() {}, nil)
	assert.False(t, ok)
}

// Next and Written used out of order are programming errors.
func TestPollerMisuse(t *testing.T) {
	r := newPolled(t)
	defer r.sub.Close(nil)
	assert.Panics(t, func() { r.p.Written(nil) }, "Written without a message")
	step, _ := r.p.Next(nil)
	require.Equal(t, fastpath.StepWrite, step)
	assert.Panics(t, func() { r.p.Next(nil) }, "Next before Written")
}

// Two goroutines may own a Poller one after the other, as a transport's
// writer loop and its slow path do.
func TestPollerChangesOwner(t *testing.T) {
	r := newPolled(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.run(t, nil)
	}()
	wg.Wait()
	r.st.push(item{ev: listen.ToolsListChanged()})
	assert.Equal(t, fastpath.StepWait, r.run(t, nil))
	assert.Equal(t, []string{spec.MethodAcknowledged, spec.MethodToolsListChanged}, r.methods(t))
	r.sub.Close(nil)
}

// A subscription whose shaping may ask CanRead about a covered sub-resource
// is served by Serve (a Poller's one goroutine serves many streams, which a
// slow policy would hold); without SubResources, or without CanRead, a hub
// stream gets a Poller.
func TestPollerNotForDeliveryPolicies(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Shutdown(context.Background())) }()
	canRead := func(context.Context, *listen.Request, string) bool { return true }
	for _, tt := range []struct {
		name string
		opts listen.Options
		want bool
	}{
		{"exact URIs with CanRead", listen.Options{CanRead: canRead}, true},
		{"sub-resources without CanRead", listen.Options{SubResources: &listen.SubResources{}}, true},
		{"sub-resources with CanRead", listen.Options{SubResources: &listen.SubResources{}, CanRead: canRead}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Capabilities = listen.Capabilities{ResourcesSubscribe: true}
			sub, err := listen.Open(context.Background(), h, subResRequest("s", "file:///p/"), &tt.opts)
			require.NoError(t, err)
			defer sub.Close(nil)
			_, ok := fastpath.Attach(sub, func() {}, nil)
			assert.Equal(t, tt.want, ok)
		})
	}
}
