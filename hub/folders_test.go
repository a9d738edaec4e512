package hub_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Folder listeners: the listeners opened by listen.Open with
// Options.SubResources.

func folderRequest(id string, uris ...string) *listen.Request {
	list := make([]any, len(uris))
	for i, u := range uris {
		list[i] = u
	}
	return &listen.Request{
		ID:                 jsonrpc.StringID(id),
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      listen.Filter{spec.KeyResourceSubscriptions: list},
		ClientCapabilities: map[string]any{},
		Transport:          listen.Transport{Kind: "direct"},
	}
}

// builtin is the built-in sub-resource rule.
var builtin = &listen.SubResources{}

// openFolder opens a subscription on h with SubResources (or without) and
// returns it with its hub stream (the subscription is closed with the
// test).
func openFolder(t testing.TB, h *hub.Hub, sub bool, id string, uris ...string) *listen.Subscription {
	t.Helper()
	var rule *listen.SubResources
	if sub {
		rule = builtin
	}
	return openRule(t, h, rule, id, uris...)
}

// openRule opens a subscription on h with the sub-resource rule (nil: exact
// URIs).
func openRule(t testing.TB, h *hub.Hub, rule *listen.SubResources, id string, uris ...string) *listen.Subscription {
	t.Helper()
	s, err := listen.Open(context.Background(), h, folderRequest(id, uris...), &listen.Options{
		Capabilities: listen.Capabilities{ResourcesSubscribe: true},
		SubResources: rule,
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(nil) })
	return s
}

func TestFolderListenersSelection(t *testing.T) {
	h := newHub(t, hub.Options{})
	openFolder(t, h, true, "folder", "file:///p/", "file:///q")
	openFolder(t, h, false, "exact", "file:///p/", "file:///q")
	require.Empty(t, h.CheckIndex())
	for _, tc := range []struct {
		uri           string
		folder, exact bool
	}{
		{"file:///p/", true, true},
		{"file:///q", true, true},
		{"file:///p/a/b.txt", true, false},
		{"file:///q/r", true, false},
		{"FILE:///q/r", true, false},
		{"file:///q/r?v=2#x", true, false},
		{"file:///p", false, false},
		{"file:///qr", false, false},
		{"file:///q%2Fr", false, false},
		{"file:///q/../x", false, false},
		{"file:///q/%2e%2E/x", false, false},
		{"file://h/q/r", false, false},
		{"http:///q/r", false, false},
	} {
		r, err := h.ResourceUpdated(tc.uri)
		require.NoError(t, err)
		want := 0
		if tc.folder {
			want++
		}
		if tc.exact {
			want++
		}
		assert.Equal(t, want, r.Matched, tc.uri)
	}
}

// A listener whose URIs overlap (a folder and a file in it, or two
// spellings of one URI) gets each update once.
func TestFolderListenerGetsAnUpdateOnce(t *testing.T) {
	h := newHub(t, hub.Options{})
	openFolder(t, h, true, "a", "file:///p/", "file:///p/src/", "file:///p/src/main.go", "FILE:///p/", "file:///p")
	w, keys := h.FolderWatchers("file:///p")
	assert.Equal(t, 1, w)
	assert.Equal(t, 1, keys, "only file:///p is indexed: it covers the others")
	for _, u := range []string{"file:///p", "file:///p/", "file:///p/src/main.go", "file:///p/src/x/y"} {
		r, err := h.ResourceUpdated(u)
		require.NoError(t, err)
		assert.Equal(t, 1, r.Matched, u)
	}
	// A URI with a dot segment or a query is covered only by itself: kept.
	h2 := newHub(t, hub.Options{})
	openFolder(t, h2, true, "b", "file:///p/", "file:///p/../etc", "file:///p/x?v=1")
	_, keys = h2.FolderWatchers("file:///p/")
	assert.Equal(t, 2, keys, "file:///p/x?v=1 is covered by file:///p/, file:///p/../etc is not")
	r, _ := h2.ResourceUpdated("file:///p/../etc")
	assert.Equal(t, 1, r.Matched)
}

// The delivered event is the published one: its URI is not normalised.
func TestFolderListenerReceivesTheEventAsPublished(t *testing.T) {
	h := newHub(t, hub.Options{})
	sub := openFolder(t, h, true, "a", "file:///p/")
	_, err := h.ResourceUpdated("FILE:///p/%7Euser/A.txt")
	require.NoError(t, err)
	msg := serveOne(t, sub)
	assert.Contains(t, msg, `"uri":"FILE:///p/%7Euser/A.txt"`)
}

// serveOne serves sub until its first notification after the
// acknowledgement and returns it.
func serveOne(t *testing.T, sub *listen.Subscription) string {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan string, 2)
	done := make(chan error, 1)
	go func() {
		done <- sub.Serve(ctx, listen.Sink{Write: func(b []byte) error {
			if !strings.Contains(string(b), spec.MethodAcknowledged) {
				select {
				case got <- string(b):
				default:
				}
			}
			return nil
		}})
	}()
	msg := <-got
	cancel(listen.ErrCancelled)
	<-done
	return msg
}

func TestFolderIndexLeftOnCloseAndComplete(t *testing.T) {
	h := newHub(t, hub.Options{})
	a := openFolder(t, h, true, "a", "file:///p/", "file:///x")
	openFolder(t, h, true, "b", "file:///p/")
	w, keys := h.FolderWatchers("file:///p/")
	assert.Equal(t, 2, w)
	assert.Equal(t, 2, keys)
	a.Close(nil)
	require.Empty(t, h.CheckIndex())
	w, keys = h.FolderWatchers("file:///p/")
	assert.Equal(t, 1, w)
	assert.Equal(t, 1, keys)
	h.Complete()
	require.Empty(t, h.CheckIndex())
	_, keys = h.FolderWatchers("file:///p/")
	assert.Zero(t, keys)
	r, _ := h.ResourceUpdated("file:///p/a")
	assert.Zero(t, r.Matched)
	// A folder listener opened after Complete is indexed again.
	openFolder(t, h, true, "c", "file:///p/")
	r, _ = h.ResourceUpdated("file:///p/a")
	assert.Equal(t, 1, r.Matched)
	require.Empty(t, h.CheckIndex())
}

// Hub.Open called directly, with a request that names no sub-resource rule,
// opens an exact listener.
func TestDirectOpenIsExact(t *testing.T) {
	h := newHub(t, hub.Options{})
	openStream(t, h, "d", listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///p/"}})
	r, _ := h.ResourceUpdated("file:///p/a")
	assert.Zero(t, r.Matched)
	r, _ = h.ResourceUpdated("file:///p/")
	assert.Equal(t, 1, r.Matched)
}

// dbFolders is a custom rule: db://h/s.t.r is in db://h/s.t and db://h/s.
func dbFolders(uri string) ([]string, bool) {
	rest, ok := strings.CutPrefix(uri, "db://h/")
	if !ok {
		return nil, false
	}
	var out []string
	for i := len(rest) - 1; i >= 0; i-- {
		if rest[i] == '.' {
			out = append(out, "db://h/"+rest[:i], "db://h/"+rest[:i]) // repeated on purpose
		}
	}
	return out, true
}

func TestCustomResourceFolders(t *testing.T) {
	h := newHub(t, hub.Options{})
	rule := &listen.SubResources{Folders: dbFolders}
	openRule(t, h, rule, "a", "db://h/s", "db://h/s.t", "file:///p/")
	openRule(t, h, rule, "b", "DB://H/s.t")
	for uri, want := range map[string]int{
		"db://h/s.t.r": 2,
		"db://h/s.t":   2,
		"db://h/s":     1,
		"db://h/s.u":   1,
		"db://h/st":    0,
		"db://h/s/t":   0, // claimed: no path rule
		"file:///p/a":  1, // not claimed: the built-in rule
	} {
		r, err := h.ResourceUpdated(uri)
		require.NoError(t, err)
		assert.Equal(t, want, r.Matched, uri)
	}
}

// The listens of different rules share a hub and each is matched by its
// own rule: the custom rule's listener hears db://h/s.t.r and not
// db://h/s/x (it claims every db://h/ URI: no path rule for them), the
// built-in rule's listener the other way round. When the last listener of a
// custom rule closes, its index goes.
func TestFolderRulesApartOnOneHub(t *testing.T) {
	h := newHub(t, hub.Options{})
	custom := openRule(t, h, &listen.SubResources{Folders: dbFolders}, "custom", "db://h/s")
	openRule(t, h, &listen.SubResources{}, "builtin", "db://h/s")
	for uri, want := range map[string]int{"db://h/s.t.r": 1, "db://h/s/x": 1, "db://h/s": 2} {
		r, err := h.ResourceUpdated(uri)
		require.NoError(t, err)
		assert.Equal(t, want, r.Matched, uri)
	}
	require.Empty(t, h.CheckIndex())
	custom.Close(nil)
	require.Empty(t, h.CheckIndex(), "the custom rule's index is dropped with its last listener")
	r, _ := h.ResourceUpdated("db://h/s.t.r")
	assert.Zero(t, r.Matched)
}

func TestPanickingResourceFolders(t *testing.T) {
	h := newHub(t, hub.Options{})
	rule := &listen.SubResources{Folders: func(string) ([]string, bool) { panic("boom") }}
	openFolder(t, h, false, "exact", "file:///p/a")
	r, err := h.ResourceUpdated("file:///p/a")
	require.NoError(t, err, "no folder listener: the function is not called")
	assert.Equal(t, 1, r.Matched)
	openRule(t, h, rule, "folder", "file:///p/")
	r, err = h.ResourceUpdated("file:///p/a")
	var pe *listen.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "SubResources.Folders", pe.Op)
	assert.Zero(t, r.Matched, "nothing is published")
	r, err = h.ResourceUpdated("not a uri")
	assert.ErrorIs(t, err, listen.ErrInvalidEvent, "validation comes first")
	assert.Zero(t, r.Matched)
}

// The folder index's key reduction keeps exactly the keys no other key
// covers, in their first order: checked against the rule itself (every
// pair, resuri.Covers) on random sets of related URIs, including repeats,
// trailing and doubled slashes, queries, other authorities and dot
// segments.
func TestCoverKeysMatchesTheRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 22))
	parts := []string{"a", "b", "", "ab", ".", "..", "a?x", "b#f", "%61"}
	bases := []string{"file://", "file://h", "FILE://H", "urn:", "http://x:1", "no-scheme"}
	for round := range 2000 {
		var uris []string
		for range 1 + rng.IntN(12) {
			var sb strings.Builder
			sb.WriteString(bases[rng.IntN(len(bases))])
			for range rng.IntN(5) {
				sb.WriteByte('/')
				sb.WriteString(parts[rng.IntN(len(parts))])
			}
			uris = append(uris, sb.String())
		}
		var want []string
		for i, u := range uris {
			c := resuri.Canonical(u)
			if slices.Contains(want, c) || slices.ContainsFunc(uris[:i], func(o string) bool { return resuri.Canonical(o) == c }) {
				continue
			}
			if !slices.ContainsFunc(uris, func(o string) bool { return resuri.Canonical(o) != c && covers(o, u) }) {
				want = append(want, c)
			}
		}
		assert.Equal(t, want, hub.CoverKeys(uris), "round %d: %q", round, uris)
	}
}

// covers reports whether the subscribed URI covers the updated one under
// the built-in rule: their normal forms are equal, or the subscribed one's
// is one of the Folders of the updated one's.
func covers(subscribed, updated string) bool {
	s, u := resuri.Canonical(subscribed), resuri.Canonical(updated)
	found := s == u
	resuri.Folders(u, func(f string) bool {
		found = found || f == s
		return !found
	})
	return found
}
