package hub

import (
	"sync"
	"time"
)

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
