package hub

import (
	"errors"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/hubrelay"
)

// ErrRelayJoined is returned when a bridge (natsbridge, redisbridge, a
// cluster.Node) is started on a hub another one has already joined: a hub
// has at most one relay, which carries its publications to the other
// instances of the server (see Publish).
var ErrRelayJoined = errors.New("hub: another relay has joined this hub")

// relayBox holds the joined relay (an interface value cannot be stored in
// an atomic.Pointer directly).
type relayBox struct{ r hubrelay.Relay }

func init() {
	hubrelay.Join = func(h any, r hubrelay.Relay) error { return h.(*Hub).join(r) }
	hubrelay.Leave = func(h any, r hubrelay.Relay) { h.(*Hub).leave(r) }
	hubrelay.PublishLocal = func(h any, ev listen.Event) (any, error) { return h.(*Hub).publishLocal(ev) }
}

// join makes r the hub's relay: every later Publish hands its event to r
// before the local fan-out (see hubrelay.Relay). A hub has at most one
// relay: join fails with ErrRelayJoined while another is joined. leave
// undoes it.
func (h *Hub) join(r hubrelay.Relay) error {
	if r == nil {
		return errors.New("hub: Join needs a relay")
	}
	if !h.relay.CompareAndSwap(nil, &relayBox{r: r}) {
		return ErrRelayJoined
	}
	return nil
}

// leave detaches r, if it is the hub's relay: later publications stay
// local. A Publish already inside r.Relay finishes normally.
func (h *Hub) leave(r hubrelay.Relay) {
	if b := h.relay.Load(); b != nil && b.r == r {
		h.relay.CompareAndSwap(b, nil)
	}
}

// publishLocal delivers ev to this hub's listeners only, exactly as
// Publish does without a relay: a relay delivers with it the events it
// receives from other instances (and its resynchronisation hints). It
// fails like Publish.
func (h *Hub) publishLocal(ev listen.Event) (Report, error) {
	if err := ev.Validate(); err != nil {
		return Report{}, err
	}
	return h.fanOut(ev)
}
