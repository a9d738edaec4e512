package hub_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// watchLog records OnAttach and OnDetach calls.
type watchLog struct {
	mu      sync.Mutex
	events  []string             // "+uri" / "-uri" ("+dir/" for a folder: "+F:uri")
	seq     map[hub.Watch][]bool // per watch: true for attach
	inside  bool                 // a hook is running (they must not overlap)
	overlap bool
}

func newWatchLog() *watchLog { return &watchLog{seq: map[hub.Watch][]bool{}} }

func (w *watchLog) record(k hub.Watch, attach bool) {
	w.mu.Lock()
	if w.inside {
		w.overlap = true
	}
	w.inside = true
	w.mu.Unlock()
	runtime.Gosched() // widen the window in which another hook could run
	w.mu.Lock()
	name := k.URI
	if k.Folder {
		name = "F:" + name
	}
	if attach {
		name = "+" + name
	} else {
		name = "-" + name
	}
	w.events = append(w.events, name)
	w.seq[k] = append(w.seq[k], attach)
	w.inside = false
	w.mu.Unlock()
}

func (w *watchLog) options(delay time.Duration) hub.Options {
	return hub.Options{
		OnAttach:    func(k hub.Watch) { w.record(k, true) },
		OnDetach:    func(k hub.Watch) { w.record(k, false) },
		DetachDelay: delay,
	}
}

func (w *watchLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.events
	w.events = nil
	return out
}

func uriFilter(uris ...string) listen.Filter {
	list := make([]any, len(uris))
	for i, u := range uris {
		list[i] = u
	}
	return listen.Filter{spec.KeyResourceSubscriptions: list}
}

// The first listener on a URI attaches it, the last one's Close detaches
// it; a folder listener watches the normal form of its URIs, apart from
// the exact ones; Shutdown detaches everything once.
func TestAttachAndDetach(t *testing.T) {
	log := newWatchLog()
	h := newHub(t, log.options(0))
	a := openStream(t, h, "a", uriFilter("file:///a", "file:///a", "file:///b"))
	assert.Equal(t, []string{"+file:///a", "+file:///b"}, log.take())
	b := openStream(t, h, "b", uriFilter("file:///a"))
	assert.Empty(t, log.take(), "already watched")
	f := openScoped(t, h, uriFilter("FILE:///Dir/", "file:///Dir/x"), builtin)
	assert.Equal(t, []string{"+F:file:///Dir/"}, log.take(), "folder keys: normal form, covered ones left out")
	tools := openStream(t, h, "t", toolsOnly)
	assert.Empty(t, log.take(), "no URI, no watch")

	a.Close(nil)
	assert.Equal(t, []string{"-file:///b"}, log.take())
	a.Close(nil)
	assert.Empty(t, log.take(), "a second Close changes nothing")
	b.Close(nil)
	assert.Equal(t, []string{"-file:///a"}, log.take())

	c := openStream(t, h, "c", uriFilter("file:///c"))
	assert.Equal(t, []string{"+file:///c"}, log.take())
	h.Complete()
	got := log.take()
	slices.Sort(got)
	assert.Equal(t, []string{"-F:file:///Dir/", "-file:///c"}, got)
	c.Close(nil)
	f.Close(nil)
	tools.Close(nil)
	assert.Empty(t, log.take(), "closes after Shutdown report nothing more")
}

// With DetachDelay, a listener that reconnects within the delay finds its
// URI attached: nothing is reported; once nobody came back, one detach.
func TestDetachDelayAcrossAReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newWatchLog()
		h := newHub(t, log.options(time.Second))
		s := openStream(t, h, "a", uriFilter("file:///a", "file:///b"))
		assert.Equal(t, []string{"+file:///a", "+file:///b"}, log.take())
		s.Close(nil)
		time.Sleep(900 * time.Millisecond)
		s = openStream(t, h, "a", uriFilter("file:///a")) // the client reconnects, without b
		synctest.Wait()
		assert.Empty(t, log.take(), "back within the delay")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []string{"-file:///b"}, log.take(), "b's delay passed")
		s.Close(nil)
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, log.take())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []string{"-file:///a"}, log.take())
		time.Sleep(time.Hour)
		assert.Empty(t, log.take())
	})
}

// A hook may call back into the hub: the transitions it causes are
// reported after it returns, in order.
func TestWatchHooksMayCallBackIntoTheHub(t *testing.T) {
	var h *hub.Hub
	var mu sync.Mutex
	var events []string
	var opened listen.Stream
	h = newHub(t, hub.Options{
		OnAttach: func(k hub.Watch) {
			mu.Lock()
			events = append(events, "+"+k.URI)
			mu.Unlock()
			if k.URI == "file:///a" {
				_, opened, _ = h.Open(t.Context(), request("inner"), uriFilter("file:///b"))
			}
		},
		OnDetach: func(k hub.Watch) {
			mu.Lock()
			events = append(events, "-"+k.URI)
			mu.Unlock()
			panic("a panicking hook is ignored")
		},
	})
	s := openStream(t, h, "a", uriFilter("file:///a"))
	s.Close(nil)
	opened.Close(nil)
	assert.Equal(t, []string{"+file:///a", "+file:///b", "-file:///a", "-file:///b"}, events)
}

// The property: under concurrent opens and closes of listeners on random
// URIs (exact and folder), each watch is reported attached and detached
// alternately, starting with attach, never two hooks at once; whenever the
// hub is quiet, the attached watches are exactly those some open listener
// watches (with a delay: those, plus the ones left within the delay).
func TestPropertyAttachDetachUnderChurn(t *testing.T) {
	for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
		t.Run(fmt.Sprintf("delay=%v", delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runWatchChurn(t, delay)
			})
		})
	}
}

func runWatchChurn(t *testing.T, delay time.Duration) {
	const workers, rounds, opsPerRound = 8, 20, 30
	uris := []string{"file:///a", "file:///b", "file:///d/", "file:///d/e", "mem://x"}
	log := newWatchLog()
	h := newHub(t, log.options(delay))

	type open struct {
		s    listen.Stream
		keys []hub.Watch
	}
	var mu sync.Mutex
	live := map[*open]struct{}{}
	watchesOf := func(folder bool, us []string) []hub.Watch {
		var ks []hub.Watch
		for _, u := range us {
			ks = append(ks, hub.Watch{URI: u, Folder: folder})
		}
		if folder { // the built-in rule's folder keys: those no other of its URIs covers
			ks = ks[:0]
			covered := func(u string) bool {
				for _, o := range us {
					if o != u && (o == "file:///d/" && u == "file:///d/e") {
						return true
					}
				}
				return false
			}
			for _, u := range us {
				if !covered(u) {
					ks = append(ks, hub.Watch{URI: u, Folder: true})
				}
			}
		}
		slices.SortFunc(ks, func(a, b hub.Watch) int {
			if a.URI < b.URI {
				return -1
			} else if a.URI > b.URI {
				return 1
			}
			return 0
		})
		return slices.Compact(ks)
	}

	total := 0
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range workers {
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			wg.Go(func() {
				var mine []*open
				for range opsPerRound {
					if len(mine) > 0 && r.IntN(2) == 0 {
						i := r.IntN(len(mine))
						o := mine[i]
						mine = slices.Delete(mine, i, i+1)
						mu.Lock()
						delete(live, o)
						mu.Unlock()
						o.s.Close(nil)
						continue
					}
					us := pick(r, uris, 3)
					folder := r.IntN(3) == 0
					var rule *listen.SubResources
					if folder {
						rule = builtin
					}
					req := request("churn")
					req.SubResources = rule
					_, s, err := h.Open(t.Context(), req, uriFilter(us...))
					if err != nil {
						t.Error(err)
						return
					}
					o := &open{s: s, keys: watchesOf(folder, us)}
					mu.Lock()
					live[o] = struct{}{}
					total++
					mu.Unlock()
					mine = append(mine, o)
				}
				if r.IntN(2) == 0 { // half the workers leave at the end of the round
					for _, o := range mine {
						mu.Lock()
						delete(live, o)
						mu.Unlock()
						o.s.Close(nil)
					}
				}
			})
		}
		wg.Wait()
		if round%3 == 2 { // every third round, everyone leaves
			for o := range live {
				delete(live, o)
				o.s.Close(nil)
			}
		}
		synctest.Wait()

		// Quiet: check the attached watches against the open listeners.
		want := map[hub.Watch]bool{}
		for o := range live {
			for _, k := range o.keys {
				want[k] = true
			}
		}
		log.mu.Lock()
		require.False(t, log.overlap, "two hooks ran at once")
		for k, seq := range log.seq {
			for i, attach := range seq {
				require.Equal(t, i%2 == 0, attach, "%v: attach and detach alternate from attach: %v", k, seq)
			}
			attached := len(seq)%2 == 1
			if want[k] {
				require.True(t, attached, "%v is watched: it must be attached", k)
			} else if delay == 0 {
				require.False(t, attached, "%v is watched by nobody: it must be detached", k)
			}
		}
		for k := range want {
			require.NotEmpty(t, log.seq[k], "%v is watched and was never attached", k)
		}
		log.mu.Unlock()
		if delay > 0 {
			time.Sleep(2 * delay) // the delays pass: check again
			synctest.Wait()
			log.mu.Lock()
			for k, seq := range log.seq {
				require.Equal(t, want[k], len(seq)%2 == 1, "%v after the delay", k)
			}
			log.mu.Unlock()
		}
	}
	for o := range live {
		o.s.Close(nil)
	}
	time.Sleep(2 * delay)
	synctest.Wait()
	attaches := 0
	for k, seq := range log.seq {
		require.Equal(t, 0, len(seq)%2, "%v ends detached", k)
		attaches += len(seq) / 2
	}
	t.Logf("delay %v: %d listeners opened, %d attach/detach pairs over %d watches", delay, total, attaches, len(log.seq))
	require.Greater(t, attaches, len(log.seq), "the churn must attach and detach watches again and again")
}
