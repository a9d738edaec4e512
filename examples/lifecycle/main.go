// Command lifecycle runs one subscriptions/listen stream in process, from the
// raw request to its end, and prints every step: the narrowed filter the
// source sees, the acknowledgement, each pull, the notifications, the
// dropped events, the server ending the stream (its principal's access is
// revoked while the source waits for a change), the terminal message and
// the close reason.
//
// It drives the stream by hand, as a transport that writes the messages
// itself would: Open, Acknowledgement, StartWorker, one Continue per
// written or dropped event, Notification, Terminal, Close. Serve does all
// of this in one call.
//
//	go run ./examples/lifecycle
package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// feed is a small Source: it hands out a fixed list of changes, one per
// pull, then waits for a change that never comes, as a live source does,
// until the stream is closed. idle is closed when it starts waiting.
type feed struct {
	changes []listen.Event
	idle    chan struct{}
}

func (f *feed) Open(_ context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	b, _ := supported.MarshalJSON()
	fmt.Printf("source: open for request %s, supported filter %s\n", req.ID.Raw(), b)
	return supported, &feedStream{changes: f.changes, idle: f.idle, closed: make(chan struct{})}, nil
}

type feedStream struct {
	changes []listen.Event
	idle    chan struct{}
	closed  chan struct{} // closed by Close: releases a waiting Next
}

func (s *feedStream) Next() (listen.Event, error) {
	if len(s.changes) == 0 {
		fmt.Println("source: next -> waiting for a change")
		close(s.idle)
		<-s.closed
		return listen.Event{}, listen.ErrClosed
	}
	ev := s.changes[0]
	s.changes = s.changes[1:]
	fmt.Println("source: next ->", strings.TrimSpace(ev.Kind.String()+" "+ev.URI))
	return ev, nil
}

func (s *feedStream) Close(reason error) {
	fmt.Printf("source: close (%s)\n", listen.Classify(reason))
	close(s.closed)
}

func main() {
	// What a client sends: tools, prompts and one resource.
	body := []byte(`{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{
	  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
	           "io.modelcontextprotocol/clientCapabilities":{}},
	  "notifications":{"toolsListChanged":true,"promptsListChanged":true,
	                   "resourceSubscriptions":["file:///project/config.json"]}}}`)
	req, err := listen.ParseRequest(body)
	if err != nil {
		log.Fatalf("%s", jsonrpc.ErrorResponse(req.ID, err))
	}

	// What the server advertises in server/discover: no prompts.
	opts := &listen.Options{
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			ResourcesSubscribe: true,
		},
		ServerInfo: listen.Implementation{Name: "lifecycle-example", Version: "1.0.0"},
	}
	src := &feed{idle: make(chan struct{}), changes: []listen.Event{
		listen.ToolsListChanged(),
		listen.PromptsListChanged(), // not acknowledged: dropped
		listen.ResourceUpdated("file:///project/config.json").WithMetadata(map[string]any{"com.example/seq": 1}),
		listen.ResourceUpdated("file:///elsewhere.txt"), // not subscribed: dropped
	}}

	sub, err := listen.Open(context.Background(), src, req, opts)
	if err != nil {
		log.Fatalf("%s", jsonrpc.ErrorResponse(req.ID, err))
	}
	write := func(msg []byte) { fmt.Printf("wire:   %s\n", msg) }
	ack, err := sub.Acknowledgement()
	if err != nil {
		log.Fatal(err)
	}
	write(ack)

	// Elsewhere in the server, once the source has nothing more to say:
	// the principal's access is revoked (Options.Access does this by
	// itself; any goroutine may call End).
	go func() { // ends at End, which returns at once, or once the stream closed otherwise
		select {
		case <-src.idle:
			fmt.Println("server: access revoked")
			sub.End(listen.ErrRevoked)
		case <-sub.Closed():
		}
	}()

	// The owner: context.Background() for a stream with nothing above it;
	// a transport passes its connection's context.
	w, err := sub.StartWorker(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	w.Continue()
	for o := range w.Outcomes() { // closed once the worker has exited
		end := o.Err
		if end == nil {
			msg, err := sub.Notification(o.Event)
			if err == nil {
				if msg == nil {
					fmt.Printf("owner:  %s dropped (not asked for)\n", o.Event.Kind)
				} else {
					write(msg)
				}
				w.Continue() // demand: one more pull
				continue
			}
			end = err // an invalid event fails the stream
		}
		fmt.Printf("owner:  end of stream: %v\n", end)
		msg, reason := sub.Terminal(end)
		write(msg)
		sub.Close(reason)
	}
	reason := sub.CloseReason()
	fmt.Printf("done:   closed with %q (%s)\n", reason, listen.Classify(reason))
}
