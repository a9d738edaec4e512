package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Checklist 3: broadcasts only to matching listeners and supplies pending
// pulls.
func TestBroadcastsOnlyToMatchingListenersAndSuppliesPendingPulls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		tools := openStream(t, h, "tools", listen.Filter{spec.KeyToolsListChanged: true})
		res := openStream(t, h, "res", listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///a"}})
		toolsPull, resPull := pull(tools), pull(res)
		synctest.Wait() // both Next calls are blocked

		r := h.ToolsListChanged()
		assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, r)
		got := <-toolsPull
		require.NoError(t, got.err)
		assert.Equal(t, listen.KindToolsListChanged, got.ev.Kind)
		synctest.Wait()
		requireBlocked(t, resPull)

		r, err := h.ResourceUpdated("file:///a")
		require.NoError(t, err)
		assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, r)
		got = <-resPull
		require.NoError(t, got.err)
		assert.Equal(t, listen.ResourceUpdated("file:///a"), got.ev)

		tools.Close(listen.Cancelled(""))
		res.Close(listen.Cancelled(""))
		st := h.Stats()
		assert.Equal(t, 0, st.Subscriptions)
		assert.Equal(t, 0, st.Queued)
		assert.Empty(t, h.CheckIndex())
	})
}

// Checklist 4: the resource update index tracks matching listeners through
// close and completion.
func TestResourceIndexTracksListenersThroughCloseAndCompletion(t *testing.T) {
	h := newHub(t, hub.Options{})
	const target = "file:///target"
	for i := range 30 {
		list := make([]any, 200)
		for j := range list {
			list[j] = uri("unrelated", i*200+j)
		}
		openStream(t, h, "other", listen.Filter{spec.KeyResourceSubscriptions: list})
	}
	first := openStream(t, h, "first", listen.Filter{spec.KeyResourceSubscriptions: []any{target}})
	second := openStream(t, h, "second", listen.Filter{spec.KeyResourceSubscriptions: []string{"file:///x", target}})
	assert.Equal(t, 2, h.URIWatchers(target))
	uris, _, _, _, _ := h.IndexSizes()
	assert.Equal(t, 30*200+2, uris)

	r, err := h.ResourceUpdated(target)
	require.NoError(t, err)
	assert.Equal(t, hub.Report{Matched: 2, Buffered: 2}, r)
	assert.Equal(t, 2, h.Stats().Queued)

	assert.Equal(t, target, mustNext(t, second).URI)
	assert.Equal(t, 1, h.Stats().Queued)

	r, err = h.ResourceUpdated("file:///absent")
	require.NoError(t, err)
	assert.Equal(t, hub.Report{}, r)

	first.Close(listen.Cancelled(""))
	assert.Equal(t, 0, h.Stats().Queued, "closing drops the listener's queued event")
	assert.Equal(t, 1, h.URIWatchers(target))
	r, _ = h.ResourceUpdated(target)
	assert.Equal(t, 1, r.Matched)
	assert.Empty(t, h.CheckIndex())

	h.Complete()
	uris, keys, _, _, _ := h.IndexSizes()
	assert.Zero(t, uris, "Complete clears the URI index")
	assert.Zero(t, keys)
	r, _ = h.ResourceUpdated(target)
	assert.Equal(t, hub.Report{}, r)
	assert.Empty(t, h.CheckIndex())
}

// Checklist 5: bounds each queue and defaults to retaining the newest events.
func TestBoundsQueueAndDropsOldestByDefault(t *testing.T) {
	h := newHub(t, hub.Options{MaxBuffer: 2})
	s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
	for seq, want := range []hub.Report{
		{Matched: 1, Buffered: 1},
		{Matched: 1, Buffered: 1},
		{Matched: 1, Buffered: 1, Dropped: 1},
	} {
		r, err := h.Publish(seqEvent(seq + 1))
		require.NoError(t, err)
		assert.Equal(t, want, r, "seq %d", seq+1)
	}
	assert.Equal(t, hub.Stats{Subscriptions: 1, Queued: 2, Dropped: 1, MaxBuffer: 2, Overflow: hub.DropOldest}, h.Stats())
	assert.Equal(t, "drop_oldest", h.Stats().Overflow.String())
	assert.Equal(t, 2, seqOf(t, mustNext(t, s)))
	assert.Equal(t, 3, seqOf(t, mustNext(t, s)))
	h.Complete()
	_, err := s.Next()
	assert.ErrorIs(t, err, listen.ErrClosed)
}

// Checklist 6: can retain the oldest events and report dropped new
// publications.
func TestDropNewestKeepsOldest(t *testing.T) {
	h := newHub(t, hub.Options{MaxBuffer: 1, Overflow: hub.DropNewest})
	s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
	r, _ := h.Publish(seqEvent(1))
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r)
	r, _ = h.Publish(seqEvent(2))
	assert.Equal(t, hub.Report{Matched: 1, Dropped: 1}, r)
	assert.Equal(t, 1, seqOf(t, mustNext(t, s)))
	st := h.Stats()
	assert.Equal(t, uint64(1), st.Dropped)
	assert.Equal(t, hub.DropNewest, st.Overflow)
	assert.Equal(t, 0, st.Queued)
}

// Checklist 7: graceful completion wakes a blocked pull and cancellation
// releases it.
func TestCompletionWakesBlockedPullAndCancellationReleasesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
		p := pull(s)
		synctest.Wait()
		requireBlocked(t, p)
		h.Complete()
		got := <-p
		assert.ErrorIs(t, got.err, listen.ErrClosed)
		st := h.Stats()
		assert.Equal(t, 1, st.Subscriptions)
		assert.Equal(t, 1, st.Closing)
		s.Close(listen.ErrComplete)
		st = h.Stats()
		assert.Equal(t, 0, st.Subscriptions)
		assert.Equal(t, 0, st.Closing)

		s2 := openStream(t, h, "l2", listen.Filter{spec.KeyToolsListChanged: true})
		p = pull(s2)
		synctest.Wait()
		requireBlocked(t, p)
		s2.Close(listen.Cancelled("client done"))
		got = <-p
		assert.ErrorIs(t, got.err, listen.ErrClosed)
		_, err := s2.Next()
		assert.ErrorIs(t, err, listen.ErrClosed, "Next after Close answers closed")
	})
}

// Complete drains: queued events are still handed out, then ErrClosed.
func TestCompleteDrainsQueueThenCloses(t *testing.T) {
	h := newHub(t, hub.Options{})
	s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
	for i := range 3 {
		_, err := h.Publish(seqEvent(i))
		require.NoError(t, err)
	}
	h.Complete()
	r := h.ToolsListChanged()
	assert.Equal(t, hub.Report{}, r, "a completing listener takes no new event")
	for i := range 3 {
		assert.Equal(t, i, seqOf(t, mustNext(t, s)))
	}
	_, err := s.Next()
	assert.ErrorIs(t, err, listen.ErrClosed)
	assert.Equal(t, 1, h.Stats().Closing)

	// A listener opened after Complete is an ordinary one.
	s2 := openStream(t, h, "l2", listen.Filter{spec.KeyToolsListChanged: true})
	assert.Equal(t, 1, h.ToolsListChanged().Matched)
	assert.Equal(t, listen.KindToolsListChanged, mustNext(t, s2).Kind)
	s.Close(listen.ErrComplete)
	s2.Close(listen.ErrComplete)
	assert.Equal(t, hub.Stats{MaxBuffer: 100}, h.Stats())
	assert.Empty(t, h.CheckIndex())
}

// Close releases, frees and unindexes; it is idempotent.
func TestCloseFreesQueueUnindexesAndIsIdempotent(t *testing.T) {
	rec := &recorder{}
	h := newHub(t, withHooks(hub.Options{}, rec))
	f := listen.Filter{
		spec.KeyToolsListChanged:      true,
		spec.KeyPromptsListChanged:    true,
		spec.KeyResourcesListChanged:  true,
		spec.KeyResourceSubscriptions: []any{"file:///a", "file:///b", "file:///a"},
		"taskIds":                     []any{"t1"},
	}
	s := openStream(t, h, "l", f)
	keep := openStream(t, h, "keep", listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///b"}})
	uris, keys, tools, prompts, resources := h.IndexSizes()
	assert.Equal(t, []int{2, 1, 1, 1, 1}, []int{uris, keys, tools, prompts, resources}, "keys: the extension keys only")
	assert.Equal(t, 1, h.URIWatchers("file:///a"), "a duplicated URI is indexed once")

	r, _ := h.ResourceUpdated("file:///a")
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r, "a duplicated URI delivers once")
	h.ToolsListChanged()
	assert.Equal(t, 2, hub.QueueLen(s))
	assert.Positive(t, hub.QueueCap(s))

	s.Close(listen.Cancelled("bye"))
	s.Close(listen.ErrComplete)
	assert.Equal(t, 0, hub.QueueLen(s))
	assert.Equal(t, 0, hub.QueueCap(s), "the queue is freed")
	uris, keys, tools, prompts, resources = h.IndexSizes()
	assert.Equal(t, []int{1, 0, 0, 0, 0}, []int{uris, keys, tools, prompts, resources})
	assert.Equal(t, 0, h.Stats().Queued)
	require.Len(t, rec.closeInfos(), 1, "only the first Close counts")
	assert.Equal(t, "cancelled", rec.closeInfos()[0].Reason)
	_, err := s.Next()
	assert.ErrorIs(t, err, listen.ErrClosed)
	assert.Empty(t, h.CheckIndex())
	keep.Close(nil)
}

// A second concurrent Next on one stream is refused (pull_already_pending).
func TestSecondConcurrentNextIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
		p := pull(s)
		synctest.Wait()
		require.True(t, hub.Pulling(s))
		_, err := s.Next()
		assert.ErrorIs(t, err, hub.ErrPullPending)
		h.ToolsListChanged()
		got := <-p
		require.NoError(t, got.err)
		assert.False(t, hub.Pulling(s))
		s.Close(listen.ErrComplete)
	})
}

// Events handed over and queued keep publication order: the handed-over
// event first, then the queue.
func TestHandoffThenQueueKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
		p := pull(s)
		synctest.Wait()
		r1, _ := h.Publish(seqEvent(1))
		r2, _ := h.Publish(seqEvent(2)) // the blocked Next may not have woken yet
		assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, r1)
		assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r2)
		got := <-p
		require.NoError(t, got.err)
		assert.Equal(t, 1, seqOf(t, got.ev))
		assert.Equal(t, 2, seqOf(t, mustNext(t, s)))
		s.Close(nil)
	})
}

// Closing a stream whose Next was just handed an event still answers
// closed: once Close returned, no event comes out.
func TestCloseAfterHandoffAnswersClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, hub.Options{})
		s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
		// Park a Next, hand it an event and close, all before it can run:
		// the handshake is that Pulling turns true before any publish.
		p := pull(s)
		synctest.Wait()
		h.ToolsListChanged()
		s.Close(listen.Cancelled(""))
		got := <-p
		// Either outcome is allowed by timing (the Next may have returned
		// the event before Close); what must hold is that a later Next is
		// closed.
		if got.err != nil {
			assert.ErrorIs(t, got.err, listen.ErrClosed)
		}
		_, err := s.Next()
		assert.ErrorIs(t, err, listen.ErrClosed)
	})
}

// Checklist 11: validates publications and startup policy.
func TestValidatesPublicationsAndOptions(t *testing.T) {
	h := newHub(t, hub.Options{})
	_, err := h.ResourceUpdated("relative/path")
	require.ErrorIs(t, err, listen.ErrInvalidEvent)
	assert.Contains(t, err.Error(), "absolute URI")

	events := []struct {
		name string
		ev   listen.Event
		msg  string
	}{
		{"zero event", listen.Event{}, "subscription source returned an invalid event"},
		{"relative uri", listen.ResourceUpdated("a/b"), "resource update events require an absolute URI"},
		{"list change with uri", listen.Event{Kind: listen.KindToolsListChanged, URI: "file:///a"}, "list change events cannot include a resource URI"},
		{"non-JSON params", listen.ToolsListChanged().WithParams(map[string]any{"f": func() {}}), "subscription event params must be a JSON object"},
		{"non-JSON metadata", listen.PromptsListChanged().WithMetadata(map[string]any{"c": make(chan int)}), "subscription event metadata must be a JSON object"},
		{"core with extension fields", listen.Event{Kind: listen.KindResourcesListChanged, ExtensionID: "x"}, "core subscription events cannot use extension event fields"},
		{"extension without id", listen.ExtensionEvent("", listen.Filter{"a": 1}, nil), "extension subscription events require an extension id"},
		{"extension without selector", listen.ExtensionEvent("x", nil, nil), "extension subscription events require a non-empty JSON selector"},
		{"extension with core fields", listen.Event{Kind: listen.KindExtension, ExtensionID: "x", Selector: listen.Filter{"a": 1}, URI: "file:///a"}, "extension subscription events cannot use core event fields"},
	}
	for _, tc := range events {
		t.Run(tc.name, func(t *testing.T) {
			r, err := h.Publish(tc.ev)
			require.ErrorIs(t, err, listen.ErrInvalidEvent)
			assert.Equal(t, tc.msg, err.Error())
			assert.Equal(t, hub.Report{}, r)
		})
	}

	options := []struct {
		name    string
		opts    hub.Options
		wantErr string
		max     int
		policy  hub.Overflow
	}{
		{name: "zero options are the defaults", max: 100, policy: hub.DropOldest},
		{name: "explicit", opts: hub.Options{MaxBuffer: 1, Overflow: hub.DropNewest}, max: 1, policy: hub.DropNewest},
		{name: "negative max buffer", opts: hub.Options{MaxBuffer: -1}, wantErr: "hub: invalid options: MaxBuffer must be a positive integer (or 0 for the default 100), got -1"},
		{name: "unknown overflow", opts: hub.Options{Overflow: hub.Overflow(7)}, wantErr: "hub: invalid options: Overflow must be DropOldest, DropNewest or EndListener, got Overflow(7)"},
	}
	for _, tc := range options {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hub.New(tc.opts)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, hub.ErrInvalidOptions)
				assert.EqualError(t, err, tc.wantErr)
				assert.Nil(t, h)
				return
			}
			require.NoError(t, err)
			st := h.Stats()
			assert.Equal(t, tc.max, st.MaxBuffer)
			assert.Equal(t, tc.policy, st.Overflow)
		})
	}
}

// An invalid filter is refused by Open, which listen.Open reports as
// "Subscription source failed to open".
func TestOpenRefusesInvalidFilter(t *testing.T) {
	h := newHub(t, hub.Options{})
	_, s, err := h.Open(context.Background(), request("x"), listen.Filter{"bad": func() {}})
	assert.ErrorIs(t, err, hub.ErrInvalidFilter)
	assert.Nil(t, s)
	assert.Zero(t, h.Stats().Subscriptions)

	accepted, s, err := h.Open(context.Background(), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{}, accepted, "a nil filter is the empty filter")
	assert.Equal(t, 1, h.Stats().Subscriptions)
	s.Close(nil)
}

// Checklist 12: core helpers and extension selectors share filter-aware
// publication.
func TestCoreHelpersAndExtensionSelectors(t *testing.T) {
	h := newHub(t, hub.Options{})
	s := openStream(t, h, "l", listen.Filter{
		spec.KeyPromptsListChanged:   true,
		spec.KeyResourcesListChanged: true,
		"taskIds":                    []any{"task-one"},
	})
	other := openStream(t, h, "other", listen.Filter{"taskIds": []any{"task-two", "task-three"}})

	assert.Equal(t, hub.Report{}, h.ToolsListChanged())
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, h.PromptsListChanged())
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, h.ResourcesListChanged())
	r, err := h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"task-one"}}, "task-one"))
	require.NoError(t, err)
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r)
	r, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"task-four"}}, "task-four"))
	require.NoError(t, err)
	assert.Equal(t, hub.Report{}, r)
	r, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"unknownKey": true}, nil))
	require.NoError(t, err)
	assert.Equal(t, hub.Report{}, r)

	assert.Equal(t, listen.KindPromptsListChanged, mustNext(t, s).Kind)
	assert.Equal(t, listen.KindResourcesListChanged, mustNext(t, s).Kind)
	ev := mustNext(t, s)
	assert.Equal(t, listen.KindExtension, ev.Kind)
	assert.Equal(t, "task-one", ev.Payload)

	r, _ = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"task-two"}}, "task-two"))
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r)
	assert.Equal(t, "task-two", mustNext(t, other).Payload)
	s.Close(nil)
	other.Close(nil)
}

// Checklist 13: instruments open, publication, overflow, completion and
// close.
func TestInstrumentsEveryOperation(t *testing.T) {
	rec := &recorder{}
	h := newHub(t, withHooks(hub.Options{MaxBuffer: 1}, rec))
	req := request("listen-7")
	req.Transport.Kind = "streamable_http"
	_, s, err := h.Open(context.Background(), req, listen.Filter{
		spec.KeyToolsListChanged:   true,
		"taskIds":                  []any{"t"},
		spec.KeyPromptsListChanged: true,
	})
	require.NoError(t, err)
	require.Len(t, rec.opens, 1)
	assert.Equal(t, hub.OpenInfo{
		Subscriptions: 1,
		FilterKeys:    []string{"promptsListChanged", "taskIds", "toolsListChanged"},
		RequestID:     jsonrpc.StringID("listen-7"),
		Transport:     "streamable_http",
	}, rec.opens[0])

	h.ToolsListChanged()
	_, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t"}}, nil))
	require.NoError(t, err)
	require.Len(t, rec.publishes, 2)
	for i := range rec.publishes {
		// The fan-out's own duration: some nanoseconds on the real clock.
		assert.Positive(t, rec.publishes[i].Duration, "publish %d", i)
		rec.publishes[i].Duration = 0
	}
	assert.Equal(t, hub.PublishInfo{
		Report: hub.Report{Matched: 1, Buffered: 1}, Queued: 1, EventKind: listen.KindToolsListChanged,
	}, rec.publishes[0])
	assert.Equal(t, hub.PublishInfo{
		Report: hub.Report{Matched: 1, Buffered: 1, Dropped: 1}, Queued: 1,
		EventKind: listen.KindExtension, ExtensionID: tasksID,
	}, rec.publishes[1])
	require.Len(t, rec.overflows, 1)
	assert.Equal(t, hub.OverflowInfo{
		Dropped: 1, Queued: 1, EventKind: listen.KindExtension, ExtensionID: tasksID, Policy: hub.DropOldest,
	}, rec.overflows[0])

	h.Complete()
	assert.Equal(t, []hub.ShutdownInfo{{Subscriptions: 1, Queued: 1}}, rec.completes)

	s.Close(listen.Cancelled("done"))
	require.Len(t, rec.closes, 1)
	assert.Equal(t, 0, rec.closes[0].Subscriptions)
	assert.Equal(t, "cancelled", rec.closes[0].Reason)
	assert.ErrorIs(t, rec.closes[0].Err, listen.ErrCancelled)
}

// Options.Logger writes the reference's attribute names at the documented
// levels.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHub(t, hub.Options{MaxBuffer: 1, Overflow: hub.DropNewest, Logger: logger})
	s := openStream(t, h, "l1", listen.Filter{spec.KeyToolsListChanged: true, "taskIds": []any{"t"}})
	h.ToolsListChanged()
	_, err := h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t"}}, nil))
	require.NoError(t, err)
	h.Complete()
	s.Close(listen.Disconnected(errors.New("eof")))

	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		delete(m, "time")
		recs = append(recs, m)
	}
	want := []map[string]any{
		{"level": "DEBUG", "msg": "subscription hub open", "subscriptions": 1.0, "filter_keys": []any{"taskIds", "toolsListChanged"}, "request_id": `"l1"`, "transport": "direct"},
		{"level": "DEBUG", "msg": "subscription hub publish", "matched": 1.0, "delivered": 0.0, "buffered": 1.0, "dropped": 0.0, "queued": 1.0, "event_kind": "tools_list_changed"},
		{"level": "DEBUG", "msg": "subscription hub publish", "matched": 1.0, "delivered": 0.0, "buffered": 0.0, "dropped": 1.0, "queued": 1.0, "event_kind": "extension", "extension_id": tasksID},
		{"level": "WARN", "msg": "subscription hub overflow", "dropped": 1.0, "queued": 1.0, "event_kind": "extension", "extension_id": tasksID, "policy": "drop_newest"},
		{"level": "INFO", "msg": "subscription hub shutdown", "subscriptions": 1.0, "queued": 1.0},
		{"level": "DEBUG", "msg": "subscription hub close", "subscriptions": 0.0, "reason": "disconnected"},
	}
	assert.Equal(t, want, recs)

	// At the default level (Info) only overflows and completions log.
	buf.Reset()
	h2 := newHub(t, hub.Options{MaxBuffer: 1, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	s2 := openStream(t, h2, "l2", listen.Filter{spec.KeyToolsListChanged: true})
	h2.ToolsListChanged()
	s2.Close(nil)
	assert.Empty(t, buf.String())
}

// Hooks run with no lock held: they may call back into the hub, even to
// open, publish and close.
func TestHooksMayCallBackIntoTheHub(t *testing.T) {
	var h *hub.Hub
	hooks := &reentrant{h: &h}
	h = newHub(t, withHooks(hub.Options{MaxBuffer: 1}, hooks))
	s := openStream(t, h, "l", listen.Filter{spec.KeyToolsListChanged: true})
	h.ToolsListChanged()
	h.ToolsListChanged() // overflows
	h.Complete()
	s.Close(listen.ErrComplete)
	assert.Equal(t, 6, hooks.calls)
	assert.Equal(t, 0, h.Stats().Subscriptions)
}

// reentrant is a Hooks whose every hook calls back into the hub: Stats,
// Open, Publish and Close all take the hub's locks, so a hook run under one
// of them would deadlock. Nested hook calls (from its own Open, Publish and
// Close) are not counted.
type reentrant struct {
	h     **hub.Hub
	depth int
	calls int
}

func (r *reentrant) touch() {
	if r.depth > 0 {
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	r.calls++
	h := *r.h
	_ = h.Stats()
	_, s, err := h.Open(context.Background(), nil, listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///hook"}})
	if err != nil {
		panic(err)
	}
	_, _ = h.ResourceUpdated("file:///hook")
	s.Close(listen.ErrComplete)
}

func (r *reentrant) OnOpen(hub.OpenInfo)         { r.touch() }
func (r *reentrant) OnPublish(hub.PublishInfo)   { r.touch() }
func (r *reentrant) OnOverflow(hub.OverflowInfo) { r.touch() }
func (r *reentrant) OnShutdown(hub.ShutdownInfo) { r.touch() }
func (r *reentrant) OnClose(hub.CloseInfo)       { r.touch() }

// A panicking OnOpen closes the listener it was told about; through
// listen.Open it becomes "Subscription source failed to open".
func TestPanickingOnOpenClosesTheListener(t *testing.T) {
	h := newHub(t, hub.Options{OnOpen: func(hub.OpenInfo) { panic("boom") }})
	assert.Panics(t, func() {
		_, _, _ = h.Open(context.Background(), request("x"), listen.Filter{spec.KeyToolsListChanged: true})
	})
	assert.Equal(t, 0, h.Stats().Subscriptions)
	assert.Empty(t, h.CheckIndex())

	_, err := listen.Open(context.Background(), h, listenRequest("y", listen.Filter{spec.KeyToolsListChanged: true}, false), serverOptions(nil))
	require.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, core.SourceFailedToOpen, we.Message)
	assert.Equal(t, 0, h.Stats().Subscriptions)
}

// Many listeners: fan-out past the stack-sized target buffer, mass close
// (sets shrink), repeated Complete, and an index that stays consistent.
func TestManyListenersOpenPublishCloseComplete(t *testing.T) {
	var closes atomic.Int64
	h := newHub(t, hub.Options{MaxBuffer: 2, OnClose: func(hub.CloseInfo) { closes.Add(1) }})
	const n = 300
	streams := make([]listen.Stream, n)
	for i := range streams {
		streams[i] = openStream(t, h, "l", listen.Filter{
			spec.KeyToolsListChanged: true,
			// A shared URI, a private one, a non-string element (skipped)
			// and a duplicate.
			spec.KeyResourceSubscriptions: []any{"file:///shared", uri("own", i), 7, "file:///shared"},
		})
	}
	assert.Equal(t, n, h.URIWatchers("file:///shared"))
	assert.Equal(t, hub.Report{Matched: n, Buffered: n}, h.ToolsListChanged())
	r, _ := h.ResourceUpdated("file:///shared")
	assert.Equal(t, hub.Report{Matched: n, Buffered: n}, r)
	r, _ = h.ResourceUpdated("file:///shared")
	assert.Equal(t, hub.Report{Matched: n, Buffered: n, Dropped: n}, r)
	r, _ = h.ResourceUpdated(uri("own", 17))
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1, Dropped: 1}, r)

	for i := range n - 10 { // close all but the last ten, from the front
		streams[i].Close(listen.Cancelled(""))
		if i%50 == 0 {
			require.Empty(t, h.CheckIndex())
		}
	}
	require.Empty(t, h.CheckIndex())
	assert.Equal(t, 10, h.URIWatchers("file:///shared"))
	assert.Equal(t, 20, h.Stats().Queued)
	r, _ = h.ResourceUpdated("file:///shared")
	assert.Equal(t, 10, r.Matched)

	h.Complete()
	h.Complete() // completing twice counts each listener once
	st := h.Stats()
	assert.Equal(t, 10, st.Subscriptions)
	assert.Equal(t, 10, st.Closing)
	for _, s := range streams[n-10:] {
		for range 2 {
			ev := mustNext(t, s)
			assert.Equal(t, "file:///shared", ev.URI)
		}
		_, err := s.Next()
		require.ErrorIs(t, err, listen.ErrClosed)
		s.Close(listen.ErrComplete)
	}
	assert.Equal(t, hub.Stats{Dropped: uint64(n + 1 + 10), MaxBuffer: 2}, h.Stats())
	assert.Equal(t, int64(n), closes.Load())
	require.Empty(t, h.CheckIndex())
}
