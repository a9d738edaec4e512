package hub

import (
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/resuri"
)

// This file holds the folder index: the listeners opened with
// listen.Options.SubResources, whose URIs cover their sub-resources (the
// rule is at listen.SubResources).
//
// Hub.folders maps the normal form (resuri.Canonical) of each URI of a
// folder listener to its listeners. Under the built-in rule the URIs that
// cover an update are its own normal form and its folders (resuri.Folders:
// the prefixes of its path at '/' boundaries), so Publish looks up at most
// 2 x (path depth) + 2 entries, whatever the number of listeners. Those
// URIs form a chain (each covers the longer ones), and a listener is
// indexed only under its URIs that no other of its URIs covers (coverKeys),
// so it sits in at most one of the sets an update selects: no listener
// receives an update twice, with no deduplication at publish time.
//
// A rule with a Folders function (listen.SubResources.Folders) has an
// index of its own, Hub.custom, one per rule value (the listens opened with
// the same listen.Options share one): for the updated URIs it claims,
// Publish looks up what it returns instead of the path's prefixes. It
// gives no such guarantee: those targets are deduplicated.

// folderIndex is the index of the folder listeners of one sub-resource
// rule. Its fields are guarded by Hub.mu.
type folderIndex struct {
	rule *listen.SubResources // nil for the built-in rule
	sets map[string]*set      // normal form of a URI -> listeners
	n    int                  // listeners indexed here
}

// folderIndexLocked returns the index of rule's folder listeners, creating
// a custom one when needed. h.mu is held for writing.
func (h *Hub) folderIndexLocked(rule *listen.SubResources) *folderIndex {
	if rule.Folders == nil {
		return &h.folders
	}
	for _, idx := range h.custom {
		if idx.rule == rule {
			return idx
		}
	}
	idx := &folderIndex{rule: rule, sets: make(map[string]*set)}
	// Copied on write: Publish reads h.custom's slice after releasing h.mu.
	h.custom = append(slices.Clip(h.custom), idx)
	return idx
}

// leaveFolderIndexLocked counts a folder listener of idx out, dropping a
// custom index that has none left. h.mu is held for writing.
func (h *Hub) leaveFolderIndexLocked(idx *folderIndex) {
	idx.n--
	if idx.n == 0 && idx.rule != nil {
		if i := slices.Index(h.custom, idx); i >= 0 {
			h.custom = slices.Delete(slices.Clone(h.custom), i, i+1)
		}
	}
}

// stackSets is how many folder sets Publish collects without allocating:
// enough for a path of depth 14.
const stackSets = 32

// coverKeys returns the normal forms of the listener's URIs, without
// duplicates, leaving out (when reduce is set: the built-in rule) those
// another of them covers.
//
// It takes time linear in the bytes of the URIs (and n log n comparisons
// to sort them), whatever their depth: every URI that covers a key is a
// proper prefix of it (resuri.Folders), so in sorted order the keys that
// may cover a key are the chain of its prefixes met before it, kept on a
// stack; each key then walks its own folders once, longest first, against
// that chain, comparing lengths only. (Looking each folder up in a set
// would hash every prefix: quadratic in the length of a URI full of '/'.)
func coverKeys(uris uriList, reduce bool) []string {
	keys := make([]string, 0, uris.len())
	uris.each(func(u string) { keys = append(keys, resuri.Canonical(u)) })
	keys = dedupe(keys)
	if !reduce || len(keys) < 2 {
		return keys
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	covered := make([]bool, len(keys))
	var chain []string // keys met so far that are prefixes of prev, shortest first
	prev := ""
	for _, i := range order {
		k := keys[i]
		common := commonPrefix(prev, k)
		for len(chain) > 0 && len(chain[len(chain)-1]) > common {
			chain = chain[:len(chain)-1]
		}
		// Every key of chain is now a proper prefix of k (keys are
		// distinct), and every key that is one is in chain.
		if len(chain) > 0 {
			top := len(chain) - 1
			resuri.Folders(k, func(f string) bool {
				for top >= 0 && len(chain[top]) > len(f) {
					top--
				}
				if top >= 0 && len(chain[top]) == len(f) {
					covered[i] = true // both are prefixes of k: equal
				}
				return top >= 0 && !covered[i]
			})
		}
		chain = append(chain, k)
		prev = k
	}
	out := keys[:0]
	for i, k := range keys {
		if !covered[i] {
			out = append(out, k)
		}
	}
	return out
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for n-i >= 64 && a[i:i+64] == b[i:i+64] { // compared by the runtime's memequal
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// publishFolders is Publish of a resource update while folder listeners
// are open: the listeners watching its URI exactly, plus the folder
// listeners one of whose URIs covers it, by their rule.
func (h *Hub) publishFolders(ev listen.Event, start time.Time) (Report, error) {
	c := resuri.Canonical(ev.URI)
	// The custom rules run before the lock: they are the application's
	// code. claims[i] is what custom[i] claims (nil: the built-in rule).
	h.mu.RLock()
	custom := h.custom
	h.mu.RUnlock()
	var claims [][]string
	for i, idx := range custom {
		fs, ok, err := callFolders(idx.rule.Folders, ev.URI)
		if err != nil {
			return Report{}, err
		}
		if ok {
			if claims == nil {
				claims = make([][]string, len(custom))
			}
			keys := make([]string, len(fs))
			for j, f := range fs {
				keys[j] = resuri.Canonical(f)
			}
			claims[i] = keys
		}
	}

	var stack [stackSets]*set
	sets := stack[:0]
	// A scoped update looks up the keys of its scope only (index.go).
	var k scopeKeys // unscoped
	var kbuf [64]byte
	uris := h.uris
	if ev.Scope != "" {
		k, uris = makeScopeKeys(ev.Scope, kbuf[:0]), h.scoped
	}
	h.mu.RLock()
	if s := k.get(uris, tagURI, ev.URI); s != nil {
		sets = append(sets, s)
	}
	exact := len(sets)
	sets = h.folders.covering(sets, c, nil, k)
	builtin := len(sets)
	for i, idx := range custom {
		var claimed []string
		if claims != nil {
			claimed = claims[i]
		}
		sets = idx.covering(sets, c, claimed, k)
	}
	n := 0
	for _, s := range sets {
		n += len(s.items)
	}
	var targets []*listener
	var pooled *[]*listener
	if n > 0 {
		pooled = targetPool.Get().(*[]*listener)
		targets = slices.Grow((*pooled)[:0], n)
		for _, s := range sets {
			for _, m := range s.items {
				targets = append(targets, m.l)
			}
		}
	}
	h.mu.RUnlock()

	if len(sets) > builtin && len(sets)-exact > 1 {
		targets = dedupeListeners(targets)
	}
	r := h.offer(ev, targets)
	if pooled != nil {
		clear(targets)
		*pooled = targets[:0]
		targetPool.Put(pooled)
	}
	h.published(ev, r, start)
	return r, nil
}

// covering appends to sets those of idx under which a listener covers the
// update whose normal form is c: c itself, and its folders (resuri.Folders),
// or the normal forms claimed by a custom rule (claimed non-nil); with k,
// those of k's scope only. h.mu is held.
func (idx *folderIndex) covering(sets []*set, c string, claimed []string, k scopeKeys) []*set {
	if idx.n == 0 {
		return sets
	}
	if s := k.get(idx.sets, 0, c); s != nil {
		sets = append(sets, s)
	}
	if claimed != nil {
		for _, f := range claimed {
			if s := k.get(idx.sets, 0, f); s != nil {
				sets = append(sets, s)
			}
		}
		return sets
	}
	resuri.Folders(c, func(f string) bool {
		if s := k.get(idx.sets, 0, f); s != nil {
			sets = append(sets, s)
		}
		return true
	})
	return sets
}

// callFolders runs a rule's Folders function, turning its panic into a
// *listen.PanicError.
func callFolders(f func(string) ([]string, bool), uri string) (fs []string, ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			fs, ok = nil, false
			err = &listen.PanicError{Op: "SubResources.Folders", Value: v, Stack: debug.Stack()}
		}
	}()
	fs, ok = f(uri)
	return fs, ok, nil
}

// dedupe removes repeated strings, keeping the first of each.
func dedupe(keys []string) []string {
	if len(keys) <= 16 {
		out := keys[:0]
		for _, k := range keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// dedupeListeners removes repeated listeners, keeping the first of each.
func dedupeListeners(ls []*listener) []*listener {
	seen := make(map[*listener]struct{}, len(ls))
	out := ls[:0]
	for _, l := range ls {
		if _, dup := seen[l]; !dup {
			seen[l] = struct{}{}
			out = append(out, l)
		}
	}
	clear(ls[len(out):])
	return out
}
