// Package upstream is the client side of subscriptions/listen, for MCP
// gateways: it listens to upstream servers and feeds what they send into
// a hub that serves the gateway's own clients.
//
//	feed, err := upstream.NewFeed(upstream.FeedOptions{Upstreams: []upstream.Upstream{
//		{Name: "files", Transport: &upstream.HTTP{URL: "http://127.0.0.1:8081/mcp"}, Map: upstream.SchemePrefix("files")},
//		{Name: "notes", Transport: &upstream.Stdio{Dial: upstream.Command(notesCmd)}, Map: upstream.SchemePrefix("notes")},
//	}})
//	h, err := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
//	feed.Start(h)
//	defer feed.Close()
//	listens, err := streamhttp.New(listen.NewServer(h, listen.Options{CapabilitiesFor: feed.Capabilities}), streamhttp.Options{})
//
// # Two layers
//
//   - Open sends one subscriptions/listen on a Transport (HTTP for
//     Streamable HTTP, Stdio for a process's standard input and output),
//     waits for the acknowledgement and checks it (the first message,
//     tagged with the listen's id, accepting a subset of the filter asked
//     for); Stream.Next then returns its notifications and tells how it
//     ended: ErrCompleted (the upstream's completion result), the
//     upstream's *jsonrpc.Error, ErrDropped (the connection, also when
//     the upstream's keep-alives stopped) or ErrProtocol.
//   - A Feed keeps listens open on its upstreams and publishes what they
//     send into a hub.Hub: per upstream, one listen for the list changes,
//     whatever the number of downstream listens, and one for the URIs the
//     hub's listeners watch (its OnAttach and OnDetach), reference-counted
//     by the hub. Each is listened to again after every loss, with
//     jittered exponential backoff (FeedOptions.Listener), each loss
//     reported (OnLoss) and each acknowledgement after a gap (OnAck,
//     Ack.Gap); a change of the watched URIs is followed by coalesced
//     make-before-break re-listens. After a gap the Feed publishes hints,
//     before anything else of the new listen: a list_changed of each kind
//     the upstream acknowledged and a resources/updated for each URI of
//     its listen, which the hub delivers only to the listens that asked
//     for them.
//
// # Bounds
//
// A message from an upstream is at most MaxMessageBytes (1 MiB by
// default) on either transport; a stdio listen queues at most Buffer
// messages (then it is dropped and re-listened, its gap reported); the
// acknowledgement is awaited at most AckTimeout (10 s); a listen whose
// upstream sends keep-alives is taken for lost after a silence of 1.75
// times the longest interval seen between them (or HTTP.IdleTimeout).
//
// # Goroutines
//
// Open and Stream run on their caller's goroutine. A Feed owns, per
// listen it keeps, one goroutine and one per open stream (two during a
// re-listen); a Stdio transport one per connection (its reader). Close
// ends them all and waits for them.
package upstream
