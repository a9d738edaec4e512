package hub_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// The property: over random filters and random publications, each listener
// receives exactly the events its filter selects, in publication order, none
// other and none missing except those its overflow policy dropped (and
// counted). The model below decides selection on its own, from the plain
// values it generated, without listen's own subset check.

var (
	propURIs  = []string{"file:///a", "file:///b", "mem://c", "test://d", "https://e/x"}
	propTasks = []string{"t1", "t2", "t3", "t4"}
)

type modelListener struct {
	id        int
	stream    listen.Stream
	open      bool
	tools     bool
	prompts   bool
	resources bool
	uris      []string
	hasTasks  bool
	tasks     []string
	region    string   // "" when absent
	scopes    []string // the request's scopes
	queue     []int
	parked    <-chan result // a blocked Next, or nil
	behind    bool          // ended by EndListener
}

type modelEvent struct {
	ev     listen.Event
	kind   listen.Kind
	uri    string
	tasks  []string // selector taskIds, nil when absent
	region string   // selector region, "" when absent
	scope  string   // the event's scope, "" when unscoped
}

// stringList returns l as []any or []string, at random: both are JSON lists.
func stringList(r *rand.Rand, l []string) any {
	if r.IntN(2) == 0 {
		return slices.Clone(l)
	}
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func pick(r *rand.Rand, pool []string, max int) []string {
	n := r.IntN(max + 1)
	out := make([]string, n)
	for i := range out {
		out[i] = pool[r.IntN(len(pool))] // duplicates allowed
	}
	return out
}

func randomListener(r *rand.Rand, id int) (*modelListener, listen.Filter) {
	m := &modelListener{id: id, open: true}
	f := listen.Filter{}
	flag := func(key string, dst *bool) {
		switch x := r.IntN(10); {
		case x < 4:
			f[key] = true
			*dst = true
		case x == 4:
			f[key] = false // present but false: selects nothing
		}
	}
	flag(spec.KeyToolsListChanged, &m.tools)
	flag(spec.KeyPromptsListChanged, &m.prompts)
	flag(spec.KeyResourcesListChanged, &m.resources)
	if r.IntN(10) < 6 {
		m.uris = pick(r, propURIs, 4)
		f[spec.KeyResourceSubscriptions] = stringList(r, m.uris)
	}
	if r.IntN(2) == 0 {
		m.hasTasks = true
		m.tasks = pick(r, propTasks, 3)
		f["taskIds"] = stringList(r, m.tasks)
	}
	if r.IntN(10) < 4 {
		m.region = []string{"eu", "us"}[r.IntN(2)]
		f["region"] = m.region
	}
	if r.IntN(2) == 0 {
		m.scopes = pick(r, propScopes[:2], 2) // duplicates allowed
	}
	return m, f
}

var propScopes = []string{"tenant-a", "tenant-b", "tenant-c"}

// withScope scopes e to one of propScopes, at random (often not).
func withScope(r *rand.Rand, e modelEvent) modelEvent {
	if r.IntN(3) == 0 {
		e.scope = propScopes[r.IntN(len(propScopes))]
		e.ev = e.ev.WithScope(e.scope)
	}
	return e
}

func randomEvent(r *rand.Rand, seq int) modelEvent {
	meta := map[string]any{"seq": seq}
	switch x := r.IntN(100); {
	case x < 15:
		return modelEvent{ev: listen.ToolsListChanged().WithMetadata(meta), kind: listen.KindToolsListChanged}
	case x < 25:
		return modelEvent{ev: listen.PromptsListChanged().WithMetadata(meta), kind: listen.KindPromptsListChanged}
	case x < 35:
		return modelEvent{ev: listen.ResourcesListChanged().WithMetadata(meta), kind: listen.KindResourcesListChanged}
	case x < 70:
		u := "file:///unwatched"
		if r.IntN(6) > 0 {
			u = propURIs[r.IntN(len(propURIs))]
		}
		return modelEvent{ev: listen.ResourceUpdated(u).WithMetadata(meta), kind: listen.KindResourceUpdated, uri: u}
	default:
		me := modelEvent{kind: listen.KindExtension}
		sel := listen.Filter{}
		useTasks := r.IntN(10) < 8
		if useTasks {
			me.tasks = pick(r, append(slices.Clone(propTasks), "t-unknown"), 2)
			sel["taskIds"] = stringList(r, me.tasks)
		}
		if !useTasks || r.IntN(10) < 3 {
			me.region = []string{"eu", "us", "apac"}[r.IntN(3)]
			sel["region"] = me.region
		}
		me.ev = listen.ExtensionEvent("example/ext", sel, nil).WithMetadata(meta)
		return me
	}
}

func (m *modelListener) selects(e modelEvent) bool {
	if e.scope != "" && !slices.Contains(m.scopes, e.scope) {
		return false
	}
	switch e.kind {
	case listen.KindToolsListChanged:
		return m.tools
	case listen.KindPromptsListChanged:
		return m.prompts
	case listen.KindResourcesListChanged:
		return m.resources
	case listen.KindResourceUpdated:
		return slices.Contains(m.uris, e.uri)
	}
	if e.tasks != nil {
		if !m.hasTasks {
			return false
		}
		for _, t := range e.tasks {
			if !slices.Contains(m.tasks, t) {
				return false
			}
		}
	}
	if e.region != "" && m.region != e.region {
		return false
	}
	return true
}

func TestPropertyListenersReceiveExactlyWhatTheirFilterSelects(t *testing.T) {
	const iterations = 400
	seeds := rand.New(rand.NewPCG(20260728, 2575))
	var published, matched, dropped, delivered, ended int
	for it := range iterations {
		seed := seeds.Uint64()
		synctest.Test(t, func(t *testing.T) {
			p, m, d, dl, e := runProperty(t, seed)
			published += p
			matched += m
			dropped += d
			delivered += dl
			ended += e
		})
		if t.Failed() {
			t.Fatalf("iteration %d (seed %d) failed", it, seed)
		}
	}
	// The generator must exercise every path, not just pass.
	t.Logf("%d iterations: %d publications, %d matches, %d drops, %d direct deliveries, %d listeners ended",
		iterations, published, matched, dropped, delivered, ended)
	require.Greater(t, matched, 10*iterations)
	require.Greater(t, dropped, iterations)
	require.Greater(t, delivered, iterations/2)
	require.Greater(t, ended, iterations/10)
}

func runProperty(t *testing.T, seed uint64) (published, matchedTotal, droppedTotal, deliveredTotal, endedTotal int) {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	maxBuf := 1 + r.IntN(6)
	policy := hub.Overflow(r.IntN(3))
	h := newHub(t, hub.Options{MaxBuffer: maxBuf, Overflow: policy})
	ctx := fmt.Sprintf("seed %d, max %d, %v", seed, maxBuf, policy)

	ls := make([]*modelListener, 1+r.IntN(16)) // past 8 targets, Publish uses its pooled slice
	for i := range ls {
		m, f := randomListener(r, i)
		req := request(fmt.Sprint(i))
		req.Scopes = m.scopes
		accepted, s, err := h.Open(t.Context(), req, f)
		require.NoError(t, err)
		require.Equal(t, f, accepted)
		m.stream = s
		ls[i] = m
	}
	queued := func() (n int) {
		for _, m := range ls {
			n += len(m.queue)
		}
		return n
	}
	randomOpen := func(ok func(*modelListener) bool) *modelListener {
		var c []*modelListener
		for _, m := range ls {
			if m.open && ok(m) {
				c = append(c, m)
			}
		}
		if len(c) == 0 {
			return nil
		}
		return c[r.IntN(len(c))]
	}

	ops := r.IntN(80)
	for range ops {
		switch x := r.IntN(100); {
		case x < 65: // publish
			e := withScope(r, randomEvent(r, published))
			var want hub.Report
			for _, m := range ls {
				if !m.open || m.behind || !m.selects(e) {
					continue
				}
				want.Matched++
				switch {
				case m.parked != nil:
					want.Delivered++
				case len(m.queue) < maxBuf:
					want.Buffered++
					m.queue = append(m.queue, published)
				case policy == hub.EndListener:
					want.Dropped += 1 + len(m.queue)
					want.Ended++
					m.queue = nil
					m.behind = true
				case policy == hub.DropNewest:
					want.Dropped++
				default:
					want.Buffered++
					want.Dropped++
					m.queue = append(m.queue[1:], published)
				}
			}
			got, err := h.Publish(e.ev)
			require.NoError(t, err, ctx)
			require.Equal(t, want, got, "%s: publication %d %+v", ctx, published, e)
			for _, m := range ls {
				if m.open && m.parked != nil && m.selects(e) {
					res := <-m.parked
					require.NoError(t, res.err, ctx)
					require.Equal(t, published, res.ev.Metadata["seq"], ctx)
					m.parked = nil
				}
			}
			matchedTotal += want.Matched
			droppedTotal += want.Dropped
			endedTotal += want.Ended
			deliveredTotal += want.Delivered
			published++
		case x < 85: // pull a queued event
			m := randomOpen(func(m *modelListener) bool { return len(m.queue) > 0 })
			if m == nil {
				continue
			}
			ev, err := m.stream.Next()
			require.NoError(t, err, ctx)
			require.Equal(t, m.queue[0], ev.Metadata["seq"], "%s: listener %d", ctx, m.id)
			m.queue = m.queue[1:]
		case x < 95: // park a Next on an empty queue
			m := randomOpen(func(m *modelListener) bool { return len(m.queue) == 0 && m.parked == nil })
			if m == nil {
				continue
			}
			if m.behind {
				_, err := m.stream.Next()
				require.ErrorIs(t, err, listen.ErrFellBehind, ctx)
				continue
			}
			m.parked = pull(m.stream)
			synctest.Wait()
			require.True(t, hub.Pulling(m.stream), ctx)
		default: // close
			m := randomOpen(func(*modelListener) bool { return true })
			if m == nil {
				continue
			}
			m.stream.Close(listen.Cancelled("property"))
			m.open = false
			m.queue = nil
			if m.parked != nil {
				res := <-m.parked
				require.ErrorIs(t, res.err, listen.ErrClosed, ctx)
				m.parked = nil
			}
			require.Empty(t, h.CheckIndex(), ctx)
		}
		st := h.Stats()
		require.Equal(t, queued(), st.Queued, ctx)
		require.Equal(t, uint64(droppedTotal), st.Dropped, ctx)
		require.Equal(t, uint64(endedTotal), st.FellBehind, ctx)
	}

	// Complete, then every open listener hands out exactly its model queue.
	h.Complete()
	for _, m := range ls {
		if !m.open {
			continue
		}
		if m.parked != nil {
			res := <-m.parked
			require.ErrorIs(t, res.err, listen.ErrClosed, ctx)
			require.Empty(t, m.queue)
		}
		for _, want := range m.queue {
			ev, err := m.stream.Next()
			require.NoError(t, err, ctx)
			require.Equal(t, want, ev.Metadata["seq"], "%s: listener %d", ctx, m.id)
		}
		_, err := m.stream.Next()
		if m.behind {
			require.ErrorIs(t, err, listen.ErrFellBehind, ctx)
		} else {
			require.ErrorIs(t, err, listen.ErrClosed, ctx)
		}
		m.stream.Close(listen.ErrComplete)
	}
	require.Equal(t, hub.Stats{Dropped: uint64(droppedTotal), FellBehind: uint64(endedTotal), MaxBuffer: maxBuf, Overflow: policy}, h.Stats(), ctx)
	require.Empty(t, h.CheckIndex(), ctx)
	return published, matchedTotal, droppedTotal, deliveredTotal, endedTotal
}
