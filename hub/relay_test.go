package hub_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/hubrelay"
	"github.com/mcplisten/listen/spec"
)

// relayRecorder is a Relay that records what it is handed and refuses
// events while err is set.
type relayRecorder struct {
	mu     sync.Mutex
	events []listen.Event
	err    error
	// local, if set, is the number of events the hub's listener held when
	// each Relay call began (the relay runs before the local fan-out).
	local func() int
	seen  []int
}

func (r *relayRecorder) Relay(ev listen.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.events = append(r.events, ev)
	if r.local != nil {
		r.seen = append(r.seen, r.local())
	}
	return nil
}

func (r *relayRecorder) got() []listen.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]listen.Event(nil), r.events...)
}

// A joined relay is handed every publication, from Publish and from every
// helper, in order and before the local listeners get it; PublishLocal
// (what a relay delivers remote events with) is never relayed; after
// Leave nothing is.
func TestRelayCarriesEveryPublication(t *testing.T) {
	h := newHub(t, hub.Options{})
	s := openStream(t, h, "all", listen.Filter{
		spec.KeyToolsListChanged: true, spec.KeyPromptsListChanged: true,
		spec.KeyResourcesListChanged: true, spec.KeyResourceSubscriptions: []any{"file:///a"},
	})
	r := &relayRecorder{local: func() int { return h.Stats().Queued }}
	require.NoError(t, hubrelay.Join(h, r))

	h.ToolsListChanged()
	h.PromptsListChanged()
	h.ResourcesListChanged()
	_, err := h.ResourceUpdated("file:///a")
	require.NoError(t, err)
	rep, err := h.Publish(seqEvent(1))
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Matched)
	local, err := hubrelay.PublishLocal(h, seqEvent(2)) // a remote event: delivered, not relayed
	require.NoError(t, err)
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, local)

	got := r.got()
	require.Len(t, got, 5)
	assert.Equal(t, []listen.Kind{listen.KindToolsListChanged, listen.KindPromptsListChanged,
		listen.KindResourcesListChanged, listen.KindResourceUpdated, listen.KindToolsListChanged},
		[]listen.Kind{got[0].Kind, got[1].Kind, got[2].Kind, got[3].Kind, got[4].Kind})
	assert.Equal(t, 1, seqOf(t, got[4]))
	assert.Equal(t, []int{0, 1, 2, 3, 4}, r.seen, "each event is relayed before the local fan-out")
	for _, want := range []listen.Kind{listen.KindToolsListChanged, listen.KindPromptsListChanged,
		listen.KindResourcesListChanged, listen.KindResourceUpdated} {
		assert.Equal(t, want, mustNext(t, s).Kind)
	}
	assert.Equal(t, 1, seqOf(t, mustNext(t, s)))
	assert.Equal(t, 2, seqOf(t, mustNext(t, s)))

	hubrelay.Leave(h, r)
	h.ToolsListChanged()
	assert.Len(t, r.got(), 5, "nothing is relayed after Leave")
	assert.Equal(t, listen.KindToolsListChanged, mustNext(t, s).Kind)
}

// A hub has one relay; Leave of another relay changes nothing; a relay's
// error refuses the event everywhere; an invalid event never reaches the
// relay.
func TestRelayJoinAndRefusal(t *testing.T) {
	h := newHub(t, hub.Options{})
	s := openStream(t, h, "tools", listen.Filter{spec.KeyToolsListChanged: true})
	a, b := &relayRecorder{}, &relayRecorder{}
	require.NoError(t, hubrelay.Join(h, a))
	assert.ErrorIs(t, hubrelay.Join(h, b), hub.ErrRelayJoined)
	assert.Error(t, hubrelay.Join(h, nil))
	hubrelay.Leave(h, b) // not the relay: a stays
	h.ToolsListChanged()
	assert.Len(t, a.got(), 1)
	assert.Empty(t, b.got())

	refused := errors.New("too large for the broker")
	a.mu.Lock()
	a.err = refused
	a.mu.Unlock()
	rep, err := h.Publish(listen.ToolsListChanged())
	assert.ErrorIs(t, err, refused)
	assert.Zero(t, rep)
	assert.Equal(t, 1, h.Stats().Queued, "the refused event reached no listener")

	_, err = h.Publish(listen.Event{Kind: listen.KindResourceUpdated, URI: "not a uri"})
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = hubrelay.PublishLocal(h, listen.Event{})
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)

	hubrelay.Leave(h, a)
	require.NoError(t, hubrelay.Join(h, b), "a hub whose relay left takes another")
	assert.Equal(t, listen.KindToolsListChanged, mustNext(t, s).Kind)
}
