package hub

import (
	"github.com/mcplisten/listen"
)

// Test-only views of the hub's internals.

var (
	ErrInvalidFilter = errInvalidFilter
	ErrPullPending   = errPullPending
)

const DefaultMaxBuffer = defaultMaxBuffer

// QueueLen returns the number of events queued on a hub stream.
func QueueLen(s listen.Stream) int {
	l := s.(*listener)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.q.len()
}

// QueueCap returns the capacity of a hub stream's ring buffer.
func QueueCap(s listen.Stream) int {
	l := s.(*listener)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q == nil {
		return 0
	}
	return len(l.q.buf)
}

// Pulling reports whether a Next is blocked on the stream.
func Pulling(s listen.Stream) bool {
	l := s.(*listener)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pulling
}

// URIWatchers returns the number of listeners indexed under uri.
func (h *Hub) URIWatchers(uri string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.uris[uri]; s != nil {
		return len(s.items)
	}
	return 0
}

// IndexSizes returns the number of indexed URIs, indexed filter keys, and
// the sizes of the three list-change sets.
func (h *Hub) IndexSizes() (uris, keys, tools, prompts, resources int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	size := func(k listen.Kind) int {
		if s := h.lists[k]; s != nil {
			return len(s.items)
		}
		return 0
	}
	return len(h.uris), len(h.keys), size(listen.KindToolsListChanged), size(listen.KindPromptsListChanged), size(listen.KindResourcesListChanged)
}

// CheckIndex verifies that every membership recorded by a listener points
// at its own entry, and that every set entry is recorded by its listener.
// It returns a description of the first inconsistency, or "".
func (h *Hub) CheckIndex() string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	sets := []*set{&h.all}
	for _, s := range h.lists {
		if s != nil {
			sets = append(sets, s)
		}
	}
	for _, s := range h.uris {
		sets = append(sets, s)
	}
	indexes := append([]*folderIndex{&h.folders}, h.custom...)
	for _, idx := range indexes {
		for _, s := range idx.sets {
			sets = append(sets, s)
		}
	}
	folders := 0
	perIndex := map[*folderIndex]int{}
	for _, m := range h.all.items {
		if m.l.folder != nil {
			folders++
			perIndex[m.l.folder]++
		}
	}
	if int64(folders) != h.nfolder.Load() {
		return "nfolder does not count the folder listeners"
	}
	for _, idx := range indexes {
		if perIndex[idx] != idx.n {
			return "a folder index does not count its listeners"
		}
		if idx.rule != nil && idx.n == 0 {
			return "an empty custom folder index is kept"
		}
	}
	for _, s := range h.keys {
		sets = append(sets, s)
	}
	for _, s := range h.scoped {
		sets = append(sets, s)
	}
	entries := 0
	for _, s := range sets {
		if len(s.items) == 0 && s.home != nil {
			return "empty set kept in its map: " + s.key
		}
		for pos, m := range s.items {
			if int(m.slot) >= len(m.l.memb) {
				return "member slot out of range"
			}
			mb := m.l.memb[m.slot]
			if mb.s != s || int(mb.pos) != pos {
				return "membership does not point back at its entry"
			}
			entries++
		}
	}
	for _, m := range h.all.items {
		entries -= len(m.l.memb)
	}
	if entries != 0 {
		return "listeners record memberships that no set holds"
	}
	return ""
}

// Complete is what Shutdown does before it waits: the tests drive the
// listeners' ends themselves.
func (h *Hub) Complete() { h.complete() }

// FolderWatchers returns the number of folder listeners indexed under the
// normal form key, and the number of indexed folder keys.
func (h *Hub) FolderWatchers(key string) (watchers, keys int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.folders.sets[key]; s != nil {
		watchers = len(s.items)
	}
	return watchers, len(h.folders.sets)
}

// CoverKeys is the folder index's key reduction under the built-in rule:
// the normal forms of uris, without duplicates, less those another covers.
func CoverKeys(uris []string) []string { return coverKeys(uriList{strs: uris}, true) }

// ScopedKeys returns the number of scoped keys in h's indexes.
func ScopedKeys(h *Hub) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := len(h.scoped)
	for _, idx := range append([]*folderIndex{&h.folders}, h.custom...) {
		for k := range idx.sets {
			if isScopedKey(k) {
				n++
			}
		}
	}
	return n
}

// isScopedKey reports whether an index key is a scoped one.
func isScopedKey(key string) bool { return len(key) > 0 && key[0] == 0 }
