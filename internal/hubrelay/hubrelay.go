// Package hubrelay is the seam between a hub (package hub) and what feeds
// it from elsewhere: a cluster node relaying its publications to the other
// instances of the server (package cluster), an upstream feed (package
// upstream). It is internal so that the hub's exported surface stays what
// an application uses; package hub installs the functions in its init.
package hubrelay

import "github.com/mcplisten/listen"

// A Relay carries a hub's publications to the other instances of the same
// MCP server. Once joined (Join), every Publish on the hub, from any caller,
// first hands the event to the relay, then delivers it to the local
// listeners; the relay delivers the events it receives from the other
// instances with PublishLocal, which does not relay them again.
type Relay interface {
	// Relay is called by Publish, in its goroutine, with each valid event
	// before the local fan-out. It must not wait for the broker (buffer
	// instead): Publish waits for it. An error refuses the event: Publish
	// returns it and delivers the event nowhere. A relay that cannot reach
	// its broker should count the loss and return nil, so that the local
	// listeners are still served.
	Relay(ev listen.Event) error
}

// The hub's side of the seam, set by package hub's init; h is a *hub.Hub.
var (
	// Join makes r the hub's relay. A hub has at most one relay: Join
	// fails with hub.ErrRelayJoined while another is joined.
	Join func(h any, r Relay) error
	// Leave detaches r, if it is the hub's relay.
	Leave func(h any, r Relay)
	// PublishLocal delivers ev to the hub's listeners only, exactly as
	// Publish does without a relay; report is the hub.Report. It fails
	// like Publish.
	PublishLocal func(h any, ev listen.Event) (report any, err error)
)
