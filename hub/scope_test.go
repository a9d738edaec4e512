package hub_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// openScoped opens a listener on h for the scopes, directly (as
// listen.Open does once Options.Scopes set Request.Scopes).
func openScoped(t testing.TB, h *hub.Hub, f listen.Filter, rule *listen.SubResources, scopes ...string) listen.Stream {
	t.Helper()
	req := request("scoped")
	req.Scopes = scopes
	req.SubResources = rule
	_, s, err := h.Open(context.Background(), req, f)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(nil) })
	return s
}

// A scoped publication reaches the listeners of its scope only, for every
// kind of event (list changes, exact and folder resource updates,
// extension events); an unscoped one reaches every listener, as without
// scopes.
func TestScopedPublicationsReachTheirScopeOnly(t *testing.T) {
	filter := listen.Filter{
		spec.KeyToolsListChanged:      true,
		spec.KeyPromptsListChanged:    true,
		spec.KeyResourcesListChanged:  true,
		spec.KeyResourceSubscriptions: []any{"file:///shared/", "file:///a.txt"},
		"taskIds":                     []any{"t1"},
	}
	events := map[string]listen.Event{
		"tools":     listen.ToolsListChanged(),
		"prompts":   listen.PromptsListChanged(),
		"resources": listen.ResourcesListChanged(),
		"exact":     listen.ResourceUpdated("file:///a.txt"),
		"extension": listen.ExtensionEvent("example/tasks", listen.Filter{"taskIds": []any{"t1"}}, nil),
	}
	for _, folders := range []bool{false, true} {
		t.Run(fmt.Sprintf("folders=%v", folders), func(t *testing.T) {
			h := newHub(t, hub.Options{})
			var rule *listen.SubResources
			if folders {
				rule = builtin
				events["folder"] = listen.ResourceUpdated("file:///shared/doc.txt")
			}
			a := openScoped(t, h, filter, rule, "tenant-a", "user-1")
			a2 := openScoped(t, h, filter, rule, "tenant-a", "tenant-a") // a duplicate scope indexes once
			b := openScoped(t, h, filter, rule, "tenant-b")
			none := openScoped(t, h, filter, rule)
			for name, ev := range events {
				for _, tc := range []struct {
					scope string
					want  []listen.Stream
				}{
					{"", []listen.Stream{a, a2, b, none}},
					{"tenant-a", []listen.Stream{a, a2}},
					{"user-1", []listen.Stream{a}},
					{"tenant-b", []listen.Stream{b}},
					{"tenant-c", nil},
				} {
					r, err := h.Publish(ev.WithScope(tc.scope))
					require.NoError(t, err)
					assert.Equal(t, len(tc.want), r.Matched, "%s to %q", name, tc.scope)
					for _, s := range []listen.Stream{a, a2, b, none} {
						wantOne := 0
						for _, w := range tc.want {
							if w == s {
								wantOne = 1
							}
						}
						require.Equal(t, wantOne, hub.QueueLen(s), "%s to %q", name, tc.scope)
						if wantOne == 1 {
							ev := mustNext(t, s)
							assert.Equal(t, tc.scope, ev.Scope)
						}
					}
				}
			}
			assert.Empty(t, h.CheckIndex())
			for _, s := range []listen.Stream{a, a2, b, none} {
				s.Close(nil)
			}
			assert.Empty(t, h.CheckIndex())
			uris, keys, tools, _, _ := h.IndexSizes()
			assert.Equal(t, [3]int{0, 0, 0}, [3]int{uris, keys, tools})
			assert.Equal(t, 0, hub.ScopedKeys(h), "the scoped index empties with its last listener")
		})
	}
}

// Through listen.Open: Options.Scopes names a listen's scopes from its
// request, and the subscription drops a scoped event of another scope even
// when its source hands it over.
func TestOptionsScopesBindsAListenToItsScopes(t *testing.T) {
	h := newHub(t, hub.Options{})
	opts := &listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
		Scopes: func(req *listen.Request) []string {
			return []string{"tenant:" + req.Auth.(string), ""}
		},
	}
	req := request("x")
	req.Notifications = toolsOnly
	req.ClientCapabilities = map[string]any{}
	req.Auth = "acme"
	sub, err := listen.Open(t.Context(), h, req, opts)
	require.NoError(t, err)
	defer sub.Close(nil)
	assert.Nil(t, req.Scopes, "the caller's request is left as it was: the Source saw a copy")

	r := h.ToolsListChanged()
	assert.Equal(t, 1, r.Matched)
	r, _ = h.Publish(listen.ToolsListChanged().WithScope("tenant:other"))
	assert.Equal(t, 0, r.Matched)
	r, _ = h.Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
	assert.Equal(t, 1, r.Matched)

	msg, err := sub.Notification(listen.ToolsListChanged().WithScope("tenant:other"))
	require.NoError(t, err)
	assert.Nil(t, msg, "another scope's event is dropped by the subscription itself")
	msg, err = sub.Notification(listen.ToolsListChanged().WithScope("tenant:acme"))
	require.NoError(t, err)
	assert.NotNil(t, msg)

	_, err = listen.Open(t.Context(), h, req, &listen.Options{Scopes: func(*listen.Request) []string { panic("x") }})
	assert.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
}

// BenchmarkPublishScoped publishes a tools list change to one tenant's 10
// listeners among 100,000 (10,000 tenants): the cost is that of the
// tenant's listeners, against an unscoped publication to all of them.
func BenchmarkPublishScoped(b *testing.B) {
	const n, perTenant = 100_000, 10
	tools := listen.Filter{spec.KeyToolsListChanged: true}
	h := newHub(b, hub.Options{})
	streams := make([]listen.Stream, n)
	for i := range n {
		req := request("bench")
		req.Scopes = []string{fmt.Sprintf("tenant-%d", i/perTenant)}
		_, s, err := h.Open(context.Background(), req, tools)
		if err != nil {
			b.Fatal(err)
		}
		streams[i] = s
	}
	b.Cleanup(func() { closeAll(streams) })
	drain := func(from, to int) {
		for _, s := range streams[from:to] {
			for hub.QueueLen(s) > 0 {
				_, _ = s.Next()
			}
		}
	}
	b.Run("scope=one-tenant", func(b *testing.B) {
		ev := listen.ToolsListChanged().WithScope("tenant-4242")
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if r, _ := h.Publish(ev); r.Matched != perTenant {
				b.Fatalf("matched %d", r.Matched)
			}
			if i%50 == 49 {
				b.StopTimer()
				drain(42420, 42430)
				b.StartTimer()
			}
		}
	})
}
