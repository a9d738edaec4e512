package natsbridge_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

const (
	watched = "file:///project/config.json"
	other   = "file:///project/other.json"
)

// clusterStreams are the listen streams held on one instance, one per
// filter.
type clusterStreams struct {
	tools, prompts, resource, tasks *stream
}

func openStreams(t *testing.T, in *instance) clusterStreams {
	t.Helper()
	return clusterStreams{
		tools:    in.listen(t, in.name+"-tools", `{"toolsListChanged":true}`),
		prompts:  in.listen(t, in.name+"-prompts", `{"promptsListChanged":true}`),
		resource: in.listen(t, in.name+"-resource", `{"resourceSubscriptions":["`+watched+`"]}`),
		tasks:    in.listen(t, in.name+"-tasks", `{"taskIds":["t1"]}`),
	}
}

// TestCrossInstanceFanOut: three instances, each with its own hub, bridge
// and HTTP listen handler, joined by one NATS server. Changes published on
// each instance reach the listen streams of every instance whose filter
// selects them, each exactly once, and nothing else.
func TestCrossInstanceFanOut(t *testing.T) {
	ns := startNATS(t, 0)
	var ins []*instance
	for _, name := range []string{"A", "B", "C"} {
		ins = append(ins, newInstance(t, name, connect(t, ns.ClientURL()), natsOptions()))
	}
	streams := make([]clusterStreams, len(ins))
	for i, in := range ins {
		streams[i] = openStreams(t, in)
	}

	// Every instance publishes one event of each kind (and one that no
	// stream selects), then one fence per stream kind.
	type sent struct {
		id   string
		kind string // which stream must see it: tools, prompts, resource, tasks, none
	}
	var all []sent
	for _, in := range ins {
		b := in.bridge
		pub := func(ev listen.Event, id, kind string) {
			t.Helper()
			r, err := b.Hub().Publish(tagged(ev, id))
			require.NoError(t, err)
			if kind == "none" {
				assert.Zero(t, r.Matched, "local listeners of %s", id)
			} else {
				assert.Equal(t, 1, r.Matched, "local listeners of %s", id)
			}
			all = append(all, sent{id, kind})
		}
		for i := range 3 {
			p := fmt.Sprintf("%s-%d-", in.name, i)
			pub(listen.ToolsListChanged(), p+"tools", "tools")
			pub(listen.PromptsListChanged(), p+"prompts", "prompts")
			pub(listen.ResourceUpdated(watched), p+"resource", "resource")
			pub(listen.ResourceUpdated(other), p+"other", "none")
			pub(listen.ResourcesListChanged(), p+"reslist", "none")
			pub(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}}, map[string]any{"status": "working", "pct": 0.5}), p+"task", "tasks")
			pub(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t2"}}, map[string]any{"status": "done"}), p+"task2", "none")
		}
	}
	// Fences: one per publisher and stream kind. A stream that has seen the
	// fence of every publisher has seen everything they published before
	// (per-publisher order).
	for _, in := range ins {
		f := in.name + "-fence"
		for _, ev := range []listen.Event{
			listen.ToolsListChanged(), listen.PromptsListChanged(), listen.ResourceUpdated(watched),
			listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}}, map[string]any{"status": "fence"}),
		} {
			_, err := in.hub.Publish(tagged(ev, f))
			require.NoError(t, err)
		}
	}

	for i, in := range ins {
		for kind, s := range map[string]*stream{
			"tools": streams[i].tools, "prompts": streams[i].prompts,
			"resource": streams[i].resource, "tasks": streams[i].tasks,
		} {
			// Read until each publisher's fence was seen: per-publisher order
			// means everything that publisher sent before is in.
			got := map[string]int{}
			fences := 0
			var notes []note
			for fences < len(ins) {
				n := s.next(t)
				notes = append(notes, n)
				got[n.id]++
				if len(n.id) > 6 && n.id[len(n.id)-6:] == "-fence" {
					fences++
				}
			}
			for _, x := range all {
				want := 0
				if x.kind == kind {
					want = 1
				}
				assert.Equal(t, want, got[x.id], "instance %s stream %s event %s", in.name, kind, x.id)
			}
			for _, n := range notes {
				switch kind {
				case "tools":
					assert.Equal(t, spec.MethodToolsListChanged, n.method)
				case "prompts":
					assert.Equal(t, spec.MethodPromptsListChanged, n.method)
				case "resource":
					assert.Equal(t, spec.MethodResourceUpdated, n.method)
					assert.Equal(t, watched, n.uri)
				case "tasks":
					assert.Equal(t, "notifications/tasks/status", n.method)
					assert.Equal(t, "t1", n.params["taskId"])
				}
				assert.NotEmpty(t, n.id, "an untagged notification on %s %s: %+v", in.name, kind, n)
			}
			// Per-publisher order: the i-th event of a publisher precedes its
			// (i+1)-th.
			last := map[string]string{}
			for _, n := range notes {
				pubr := n.id[:1]
				if prev, ok := last[pubr]; ok {
					assert.Less(t, prev, n.id, "order of %s's events on %s %s", pubr, in.name, kind)
				}
				last[pubr] = n.id
			}
		}
	}

	// Nothing echoed, nothing dropped; every instance received the others'
	// events.
	perInstance := uint64(len(all)/len(ins) + 4)
	for _, in := range ins {
		st := in.bridge.Stats()
		assert.Equal(t, perInstance, st.Published, in.name)
		assert.Equal(t, perInstance*uint64(len(ins)-1), st.Received, in.name)
		assert.LessOrEqual(t, st.Echoes, perInstance, in.name) // own messages may still be on their way back
		assert.Zero(t, st.Dropped.Total(), in.name)
		assert.Zero(t, st.Gaps, in.name)
		assert.Zero(t, st.PublishErrors, in.name)
	}
}
