package upstream_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/upstream"
)

const wait = 10 * time.Second

// recorder collects a Listener's callbacks on channels.
type recorder struct {
	acks   chan upstream.Ack
	losses chan error
	notes  chan upstream.Notification
}

func newRecorder() *recorder {
	return &recorder{acks: make(chan upstream.Ack, 100), losses: make(chan error, 100), notes: make(chan upstream.Notification, 1000)}
}

func (r *recorder) options(f listen.Filter) upstream.ListenerConfig {
	return upstream.ListenerConfig{
		Filter:          f,
		ListenerOptions: upstream.ListenerOptions{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond},
		OnAck:           func(a upstream.Ack) { r.acks <- a },
		OnLoss:          func(err error) { r.losses <- err },
		OnNotification:  func(n upstream.Notification) { r.notes <- n },
	}
}

// A cut connection is noticed, the listen comes back once the upstream is
// reachable again, and the acknowledgement says there was a gap.
func TestListenerReconnects(t *testing.T) {
	s := newServer(t, all, 0)
	p := testkit.NewProxy(t, strings.TrimPrefix(s.URL, "http://"))
	r := newRecorder()
	l := upstream.NewListener(&upstream.HTTP{URL: "http://" + p.Addr()}, r.options(listen.Filter{spec.KeyToolsListChanged: true}))
	defer l.Close()

	ack := testkit.Recv(t, r.acks, wait)
	assert.Nil(t, ack.Gap, "the first listen follows no gap")
	assert.Equal(t, listen.Filter{spec.KeyToolsListChanged: true}, ack.Accepted)
	s.hub.ToolsListChanged()
	assert.Equal(t, spec.MethodToolsListChanged, testkit.Recv(t, r.notes, wait).Method)

	p.Cut()
	assert.ErrorIs(t, testkit.Recv(t, r.losses, wait), upstream.ErrDropped)
	p.Restore()
	ack = testkit.Recv(t, r.acks, wait)
	require.NotNil(t, ack.Gap)
	assert.ErrorIs(t, ack.Gap.Err, upstream.ErrDropped)
	assert.GreaterOrEqual(t, ack.Gap.Attempts, 1)
	s.hub.ToolsListChanged()
	assert.Equal(t, spec.MethodToolsListChanged, testkit.Recv(t, r.notes, wait).Method)
	st := l.Stats()
	assert.Equal(t, uint64(2), st.Listens)
	assert.Equal(t, uint64(1), st.Gaps)
}

// A path that stops forwarding is noticed by the upstream's missing
// keep-alives (1.75 times their longest interval, with the automatic idle
// timeout).
func TestListenerSilentDrop(t *testing.T) {
	s := newServer(t, all, 100*time.Millisecond)
	p := testkit.NewProxy(t, strings.TrimPrefix(s.URL, "http://"))
	r := newRecorder()
	l := upstream.NewListener(&upstream.HTTP{URL: "http://" + p.Addr()}, r.options(listen.Filter{spec.KeyToolsListChanged: true}))
	defer l.Close()
	testkit.Recv(t, r.acks, wait)
	// Once a keep-alive has come, the idle timeout is armed: the first of
	// two written has been forwarded.
	testkit.Recv(t, s.keepAlives, wait)
	testkit.Recv(t, s.keepAlives, wait)

	p.Stall()
	assert.ErrorIs(t, testkit.Recv(t, r.losses, wait), upstream.ErrSilent)
	p.Cut()
	p.Restore()
	ack := testkit.Recv(t, r.acks, wait)
	require.NotNil(t, ack.Gap)
	assert.ErrorIs(t, ack.Gap.Err, upstream.ErrSilent)
}

// An upstream down at the start: the attempts back off until it is up;
// the first acknowledgement then reports the gap.
func TestListenerBacksOff(t *testing.T) {
	s := newServer(t, all, 0)
	p := testkit.NewProxy(t, strings.TrimPrefix(s.URL, "http://"))
	p.Cut()
	r := newRecorder()
	l := upstream.NewListener(&upstream.HTTP{URL: "http://" + p.Addr()}, r.options(listen.Filter{spec.KeyToolsListChanged: true}))
	defer l.Close()
	require.Eventually(t, func() bool { return l.Stats().Failures >= 3 }, wait, 5*time.Millisecond)
	p.Restore()
	ack := testkit.Recv(t, r.acks, wait)
	require.NotNil(t, ack.Gap)
	assert.GreaterOrEqual(t, ack.Gap.Attempts, 4)
}

// A burst of filter changes costs few re-listens, each made before the
// previous listen is closed; the last filter wins; an empty filter closes
// the listen.
func TestListenerCoalesces(t *testing.T) {
	s := newServer(t, all, 0)
	r := newRecorder()
	opts := r.options(listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///0"}})
	opts.RelistInterval = 300 * time.Millisecond
	l := upstream.NewListener(&upstream.HTTP{URL: s.URL}, opts)
	defer l.Close()
	testkit.Recv(t, r.acks, wait)

	var last listen.Filter
	for i := 1; i <= 100; i++ {
		uris := make([]any, i)
		for j := range uris {
			uris[j] = "file:///" + strings.Repeat("x", j)
		}
		last = listen.Filter{spec.KeyResourceSubscriptions: uris}
		l.SetFilter(last)
	}
	for {
		ack := testkit.Recv(t, r.acks, wait)
		assert.True(t, ack.Relisten)
		assert.Nil(t, ack.Gap)
		if len(core.FilterStrings(ack.Accepted, spec.KeyResourceSubscriptions)) == 100 {
			break
		}
	}
	assert.LessOrEqual(t, l.Stats().Relistens, uint64(2), "100 changes, at most 2 re-listens")
	require.Eventually(t, func() bool { return s.hub.Stats().Subscriptions == 1 }, wait, 5*time.Millisecond,
		"the previous listen was closed (the upstream notices the disconnect)")

	l.SetFilter(nil)
	require.Eventually(t, func() bool { return s.hub.Stats().Subscriptions == 0 && l.Stats().Open == 0 }, wait, 5*time.Millisecond)
	assert.Empty(t, r.losses, "closing for an empty filter is no loss")
}

// An upstream that completes every listen right after its acknowledgement
// (the go-sdk does for a filter it accepts nothing of) is not listened to
// in a loop: the waits grow up to MaxBackoff.
func TestListenerFlappingBacksOff(t *testing.T) {
	ts := httptest.NewServer(sse(event(strings.Replace(ackTools, `{"toolsListChanged":true}`, `{}`, 1))+
		event(`{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), false))
	defer ts.Close()
	defer ts.CloseClientConnections()
	r := newRecorder()
	l := upstream.NewListener(&upstream.HTTP{URL: ts.URL}, r.options(listen.Filter{spec.KeyToolsListChanged: true}))
	defer l.Close()
	assert.Nil(t, testkit.Recv(t, r.acks, wait).Gap)
	var backoffs []time.Duration
	for range 5 {
		assert.ErrorIs(t, testkit.Recv(t, r.losses, wait), upstream.ErrCompleted)
		ack := testkit.Recv(t, r.acks, wait)
		require.NotNil(t, ack.Gap)
		backoffs = append(backoffs, ack.Gap.Backoff)
	}
	// MinBackoff 20 ms doubling to MaxBackoff 100 ms, each in its upper
	// half: the first wait is at least 10 ms, the fourth and fifth 50.
	assert.GreaterOrEqual(t, backoffs[0], 10*time.Millisecond, "%v", backoffs)
	assert.GreaterOrEqual(t, backoffs[3], 50*time.Millisecond, "%v", backoffs)
	assert.GreaterOrEqual(t, backoffs[4], 50*time.Millisecond, "%v", backoffs)
}
