package hub

import (
	"errors"

	"github.com/mcplisten/listen"
)

// A Relay carries a hub's publications to the other instances of the same
// MCP server: a bridge over a broker (the nested modules natsbridge and
// redisbridge) joins the hub with Join. Once joined, every Publish on the
// hub, from any caller (the application, gosdk, the helpers), first hands
// the event to the relay, then delivers it to the local listeners; the
// relay delivers the events it receives from the other instances with
// PublishLocal, which does not relay them again. So a hub joined to a
// cluster is published to exactly as a lone one.
type Relay interface {
	// Relay is called by Publish, in its goroutine, with each valid event
	// before the local fan-out. It must not wait for the broker (buffer
	// instead): Publish waits for it. An error refuses the event: Publish
	// returns it and delivers the event nowhere. A relay that cannot reach
	// its broker should count the loss and return nil, so that the local
	// listeners are still served.
	Relay(ev listen.Event) error
}

// ErrRelayJoined is returned by Join when another relay has joined the hub.
var ErrRelayJoined = errors.New("hub: another relay has joined this hub")

// relayBox holds the joined relay (an interface value cannot be stored in
// an atomic.Pointer directly).
type relayBox struct{ r Relay }

// Join makes r the hub's relay: every later Publish hands its event to r
// before the local fan-out (see Relay). A hub has at most one relay: Join
// fails with ErrRelayJoined while another is joined. Leave undoes it.
func (h *Hub) Join(r Relay) error {
	if r == nil {
		return errors.New("hub: Join needs a relay")
	}
	if !h.relay.CompareAndSwap(nil, &relayBox{r: r}) {
		return ErrRelayJoined
	}
	return nil
}

// Leave detaches r, if it is the hub's relay: later publications stay
// local. A Publish already inside r.Relay finishes normally.
func (h *Hub) Leave(r Relay) {
	if b := h.relay.Load(); b != nil && b.r == r {
		h.relay.CompareAndSwap(b, nil)
	}
}

// PublishLocal delivers ev to this hub's listeners only, exactly as
// Publish does without a relay: a relay delivers with it the events it
// receives from other instances (and its resynchronisation hints). It
// fails like Publish.
func (h *Hub) PublishLocal(ev listen.Event) (Report, error) {
	if err := ev.Validate(); err != nil {
		return Report{}, err
	}
	return h.fanOut(ev)
}
