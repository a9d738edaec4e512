package hub

import (
	"encoding/binary"
	"slices"

	"sync"
	"time"

	"github.com/mcplisten/listen"
)

// This file holds the hub's selection index: sets of listeners with O(1)
// insertion and O(1) removal (swap-delete), and the memberships that let a
// listener find and leave every set it joined.
//
// Every set and every listener's memberships are guarded by Hub.mu: read
// under its read lock (Publish collecting targets), written under its write
// lock (Open, Close, Complete).

// member is one listener's entry in a set. slot is the index of the matching
// membership in the listener's memb slice, so that a swap-delete can update
// the moved listener's recorded position in O(1).
type member struct {
	l    *listener
	slot int32
}

// membership records that a listener sits at position pos of set s.
type membership struct {
	s   *set
	pos int32
}

// set is an unordered set of listeners. A set that lives in one of the hub's
// maps (a URI or a filter key) knows its key and its map, so that it can
// remove itself once empty.
type set struct {
	items []member
	key   string
	home  map[string]*set
	// first backs items while the set has one member: most URIs are watched
	// by one listener, and this saves an allocation and, on Publish, a
	// dependent memory load.
	first [1]member
}

// newSet returns an empty set that lives in home under key.
func newSet(home map[string]*set, key string) *set {
	s := &set{key: key, home: home}
	s.items = s.first[:0]
	return s
}

// join adds l to s and records the membership in l.
func (l *listener) join(s *set) {
	slot := int32(len(l.memb))
	l.memb = append(l.memb, membership{s: s, pos: int32(len(s.items))})
	s.items = append(s.items, member{l: l, slot: slot})
}

// joinOnce is join, unless l is already s's last member: the sets of a new
// listener's URIs are joined in a row under Hub.mu, so a URI its list names
// twice finds l at the end of its set and is joined once.
func (l *listener) joinOnce(s *set) {
	if n := len(s.items); n > 0 && s.items[n-1].l == l {
		return
	}
	l.join(s)
}

// remove deletes the member at pos by moving the last member into its place.
// An emptied set leaves its home map; a set much larger than its content
// shrinks, so that a mass close gives memory back.
func (s *set) remove(pos int32) {
	last := len(s.items) - 1
	if int(pos) != last {
		moved := s.items[last]
		s.items[pos] = moved
		moved.l.memb[moved.slot].pos = pos
	}
	s.items[last] = member{}
	s.items = s.items[:last]
	switch {
	case last == 0 && s.home != nil:
		delete(s.home, s.key)
	case cap(s.items) > 64 && last < cap(s.items)/4:
		s.items = append(make([]member, 0, 2*last), s.items...)
	}
}

// leave removes l from every set it joined, starting at membership from.
func (l *listener) leave(from int) {
	for i := len(l.memb) - 1; i >= from; i-- {
		m := l.memb[i]
		m.s.remove(m.pos)
		l.memb[i] = membership{}
	}
	l.memb = l.memb[:from]
}

// setIn returns the set of key in m, creating it when absent.
func setIn(m map[string]*set, key string) *set {
	s, ok := m[key]
	if !ok {
		s = newSet(m, key)
		m[key] = s
	}
	return s
}

// This file holds the scoped index: a publication with a Scope
// (listen.Event.Scope, a principal or a tenant) reaches only the listeners
// whose request named that scope (listen.Request.Scopes, set by
// listen.Open from listen.Options.Scopes).
//
// A listener with scopes is indexed twice: as every listener (the
// unscoped publications reach it, as before), and once more per scope,
// under keys that carry the scope. A scoped publication looks up only the
// scoped keys, so it costs what its matching listeners cost, whatever the
// number of listeners of other scopes. The scoped keys of the list changes,
// the URIs and the filter keys live in Hub.scoped; those of the folder
// listeners in their folder index, next to the unscoped ones. A scoped key
// is
//
//	"\x00" uvarint(len(scope)) scope tag rest
//
// with tag 'l' for a list change (rest: its Kind, one byte), 'u' for a
// URI, 'k' for an extension's filter key, and no tag for a folder key
// (rest is the folder's normal form): the NUL never starts a URI or a
// normal form, and the length makes the scope unambiguous whatever its
// bytes.

// Tags of the scoped keys.
const (
	tagList = 'l'
	tagURI  = 'u'
	tagKey  = 'k'
)

// kindKey is the rest of a list change's scoped key.
func kindKey(k listen.Kind) string { return string(rune(k)) }

// scopeKeys makes the scoped keys of one scope. Its zero value is the
// unscoped index, whose keys are the keys themselves. A lookup builds its
// key in a buffer of its own, so that it does not allocate (m[string(b)]).
type scopeKeys struct {
	prefix []byte // "\x00" uvarint(len(scope)) scope; empty: unscoped
}

// makeScopeKeys returns the keys of scope, its prefix built in buf.
func makeScopeKeys(scope string, buf []byte) scopeKeys {
	b := append(buf[:0], 0)
	b = binary.AppendUvarint(b, uint64(len(scope)))
	return scopeKeys{prefix: append(b, scope...)}
}

// key returns the scoped key of tag and rest (tag 0: none), as a string
// to keep (Open's joins).
func (k scopeKeys) key(tag byte, rest string) string {
	b := make([]byte, 0, len(k.prefix)+1+len(rest))
	return string(k.append(b, tag, rest))
}

func (k scopeKeys) append(b []byte, tag byte, rest string) []byte {
	b = append(b, k.prefix...)
	if tag != 0 {
		b = append(b, tag)
	}
	return append(b, rest...)
}

// get looks up the set of tag and rest in m: rest itself in the unscoped
// index.
func (k scopeKeys) get(m map[string]*set, tag byte, rest string) *set {
	if len(k.prefix) == 0 {
		return m[rest]
	}
	var buf [128]byte
	return m[string(k.append(buf[:0], tag, rest))]
}

// scopesOf returns the distinct non-empty scopes of req.
func scopesOf(req *listen.Request) []string {
	if req == nil || len(req.Scopes) == 0 {
		return nil
	}
	var out []string
	for _, s := range req.Scopes {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// joinScopes indexes l, whose accepted filter is supported, under each of
// its scopes, as Open indexes it unscoped: for each list change it selects,
// each extension filter key, and each of its URIs (exact listeners: the
// URIs; folder listeners: their folder keys, in idx). h.mu is held for
// writing.
func (h *Hub) joinScopes(l *listener, scopes []string, supported listen.Filter, uris uriList, idx *folderIndex, folderKeys []string) {
	var buf [64]byte
	for _, scope := range scopes {
		k := makeScopeKeys(scope, buf[:0])
		for key, v := range supported {
			switch kind := kindOf(key); {
			case kind == 0:
				l.join(setIn(h.scoped, k.key(tagKey, key)))
			case v == true:
				l.join(setIn(h.scoped, k.key(tagList, kindKey(kind))))
			}
		}
		if idx != nil {
			for _, f := range folderKeys {
				l.join(setIn(idx.sets, k.key(0, f)))
			}
		} else {
			for i := range uris.len() {
				if u, ok := uris.at(i); ok {
					l.joinOnce(setIn(h.scoped, k.key(tagURI, u)))
				}
			}
		}
	}
}

// selectScoped is selectSet for a publication with a scope: the candidates
// among the listeners of ev.Scope. h.mu is held.
func (h *Hub) selectScoped(ev *listen.Event, k scopeKeys) *set {
	switch ev.Kind {
	case listen.KindResourceUpdated:
		return k.get(h.scoped, tagURI, ev.URI)
	case listen.KindExtension:
		var best *set
		for key := range ev.Selector {
			s := k.get(h.scoped, tagKey, key)
			if s == nil {
				return nil
			}
			if best == nil || len(s.items) < len(best.items) {
				best = s
			}
		}
		return best
	}
	return k.get(h.scoped, tagList, kindKey(ev.Kind)) // a list change
}

// This file holds attach and detach: the hub tells the application when
// the first listener starts watching a URI and when the last one stops
// (Options.OnAttach, Options.OnDetach), so that it can start and stop
// watching the thing behind the URI.
//
// The counts live under Hub.mu, updated by the Open and the Close that
// change them; each transition (0 -> 1, 1 -> 0) appends its event to a
// queue in the same critical section, so the queue holds the transitions
// in the order the index saw them. Whoever appended delivers the queue
// once Hub.mu is released, one deliverer at a time (a caller that finds
// another delivering leaves its events to it), so the hooks run in that
// order, never two at once, and never under a lock of the hub. For one
// URI, attach and detach therefore alternate, starting with attach.
//
// With a DetachDelay, the last listener's leaving does not detach at once:
// the URI lingers, and a listener that comes back in time (a client that
// reconnects) finds it attached, with nothing reported. One timer per hub,
// armed for the earliest lingering URI, detaches those whose delay passed.

// Watch names what listeners watch: a URI as the listens name it (an
// exact listener's), or the normal form of a folder listener's URI (see
// listen.SubResources), with Folder set. A URI
// watched exactly and as a folder is two watches.
type Watch struct {
	URI    string
	Folder bool
}

// watchEvent is one transition, queued for delivery.
type watchEvent struct {
	w      Watch
	attach bool
}

// watcher keeps the counts of the watched URIs and delivers the
// transitions. count, of, lingering and the timer's state are guarded by
// Hub.mu (written under its write lock); queue and delivering by qmu.
type watcher struct {
	h                  *Hub
	onAttach, onDetach func(Watch)
	delay              time.Duration

	count     map[Watch]int
	of        map[*listener][]Watch // what each indexed listener watches
	lingering map[Watch]time.Time   // detached when the time passes
	timer     *time.Timer
	due       time.Time // when timer fires; zero when not armed

	qmu        sync.Mutex
	queue      []watchEvent
	delivering bool
}

func newWatcher(h *Hub, opts Options) *watcher {
	if opts.OnAttach == nil && opts.OnDetach == nil {
		return nil
	}
	return &watcher{
		h: h, onAttach: opts.OnAttach, onDetach: opts.OnDetach, delay: opts.DetachDelay,
		count: make(map[Watch]int), of: make(map[*listener][]Watch), lingering: make(map[Watch]time.Time),
	}
}

// opened counts the watches of l, a new listener: its URIs, or its folder
// keys. The watcher keeps them (the listener keeps only what it serves)
// until l leaves the index. Hub.mu is held for writing.
func (w *watcher) opened(l *listener, uris uriList, folderKeys []string) {
	var ws []Watch
	if folderKeys != nil {
		for _, k := range folderKeys {
			ws = append(ws, Watch{URI: k, Folder: true})
		}
	} else {
		uris.each(func(u string) { ws = append(ws, Watch{URI: u}) })
	}
	if len(ws) == 0 {
		return
	}
	w.of[l] = ws
	for _, k := range ws {
		w.count[k]++
		if w.count[k] > 1 {
			continue
		}
		if _, ok := w.lingering[k]; ok {
			delete(w.lingering, k) // back in time: still attached
			continue
		}
		w.push(k, true)
	}
}

// closed counts a closing listener's watches out, unless Shutdown took it
// out of the index already. Hub.mu is held for writing.
func (w *watcher) closed(l *listener) {
	ws, ok := w.of[l]
	if !ok {
		return
	}
	delete(w.of, l)
	for _, k := range ws {
		if w.count[k]--; w.count[k] > 0 {
			continue
		}
		delete(w.count, k)
		if w.delay <= 0 {
			w.push(k, false)
			continue
		}
		at := time.Now().Add(w.delay)
		w.lingering[k] = at
		if w.due.IsZero() {
			w.arm(at)
		}
	}
}

// arm arms the timer for at. Hub.mu is held for writing.
func (w *watcher) arm(at time.Time) {
	w.due = at
	d := time.Until(at)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.expire)
		return
	}
	w.timer.Reset(d)
}

// expire detaches the lingering watches whose delay has passed, and arms
// the timer for the next one. It runs in the timer's goroutine.
func (w *watcher) expire() {
	h := w.h
	h.mu.Lock()
	now := time.Now()
	w.due = time.Time{}
	var next time.Time
	for k, at := range w.lingering {
		if !at.After(now) {
			delete(w.lingering, k)
			w.push(k, false)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() {
		w.arm(next)
	}
	h.mu.Unlock()
	w.deliver()
}

// shutdown detaches every watch: Shutdown took every listener out of the
// index. Hub.mu is held for writing.
func (w *watcher) shutdown() {
	for k := range w.count {
		w.push(k, false)
	}
	for k := range w.lingering {
		w.push(k, false)
	}
	clear(w.count)
	clear(w.of)
	clear(w.lingering)
	if w.timer != nil {
		w.timer.Stop()
	}
	w.due = time.Time{}
}

// push queues a transition. Hub.mu is held for writing.
func (w *watcher) push(k Watch, attach bool) {
	w.qmu.Lock()
	w.queue = append(w.queue, watchEvent{k, attach})
	w.qmu.Unlock()
}

// deliver runs the hooks for the queued transitions, in order, unless
// another caller is delivering (it then delivers these too). No lock of
// the hub is held.
func (w *watcher) deliver() {
	w.qmu.Lock()
	if w.delivering {
		w.qmu.Unlock()
		return
	}
	w.delivering = true
	var batch []watchEvent
	for len(w.queue) > 0 {
		batch, w.queue = w.queue, batch[:0]
		w.qmu.Unlock()
		for i, e := range batch {
			w.call(e)
			batch[i] = watchEvent{}
		}
		w.qmu.Lock()
	}
	w.delivering = false
	w.qmu.Unlock()
}

// call runs one hook; a panic in it is recovered and ignored (the hub's
// state does not depend on it, and the goroutine may be a stream's).
func (w *watcher) call(e watchEvent) {
	defer func() { _ = recover() }()
	switch {
	case e.attach && w.onAttach != nil:
		w.onAttach(e.w)
	case !e.attach && w.onDetach != nil:
		w.onDetach(e.w)
	}
}
