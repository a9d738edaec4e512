package listen_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// sliceSource serves a fixed list of events, then ends the stream.
type sliceSource []listen.Event

type sliceStream struct {
	events []listen.Event
	closed chan struct{}
}

func (s sliceSource) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &sliceStream{events: s, closed: make(chan struct{})}, nil
}

func (s *sliceStream) Next() (listen.Event, error) {
	if len(s.events) == 0 {
		return listen.Event{}, listen.ErrClosed
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *sliceStream) Close(error) {}

// The server advertises tools.listChanged and resources.subscribe; the client
// asks for tools, prompts and one resource. The acknowledgement carries what
// the server honours, and the prompts event is dropped.
func ExampleOpen() {
	body := []byte(`{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},
		"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///project/config.json"]}}}`)
	req, err := listen.ParseRequest(body)
	if err != nil {
		fmt.Printf("%s\n", jsonrpc.ErrorResponse(req.ID, err))
		return
	}
	opts := &listen.Options{
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			ResourcesSubscribe: true,
		},
		ServerInfo: listen.Implementation{Name: "example", Version: "1.0.0"},
	}
	src := sliceSource{
		listen.ToolsListChanged(),
		listen.PromptsListChanged(), // not honoured: dropped
		listen.ResourceUpdated("file:///project/config.json"),
	}
	sub, err := listen.Open(context.Background(), src, req, opts)
	if err != nil {
		fmt.Printf("%s\n", jsonrpc.ErrorResponse(req.ID, err))
		return
	}
	reason := sub.Serve(context.Background(), listen.Sink{Write: func(msg []byte) error {
		fmt.Printf("%s\n", msg)
		return nil
	}})
	fmt.Println("closed:", listen.Classify(reason))
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"resourceSubscriptions":["file:///project/config.json"],"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}
	// {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"uri":"file:///project/config.json"}}
	// {"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}
	// closed: complete
}

// Driving the worker by hand, as a transport without Serve would: one Next
// per Continue, and the caller writes what each outcome stands for. A
// dropped event (not selected by the accepted filter) writes nothing; any
// other end (the source's completion, a failure, an invalid event, an End)
// gets its terminal message from Terminal; the loop ends when the worker
// closes its channel, and CloseReason says why.
func ExampleSubscription_StartWorker() {
	req := &listen.Request{
		ID:              jsonrpc.IntID(7),
		ProtocolVersion: spec.ProtocolVersion,
		Notifications:   listen.Filter{"promptsListChanged": true},
	}
	caps := listen.Capabilities{PromptsListChanged: true, ToolsListChanged: true}
	src := sliceSource{
		listen.PromptsListChanged(),
		listen.ToolsListChanged(), // not requested: dropped
		listen.PromptsListChanged(),
	}
	ctx := context.Background() // the connection's context, in a transport
	sub, err := listen.Open(ctx, src, req, &listen.Options{Capabilities: caps})
	if err != nil {
		panic(err)
	}
	write := func(msg []byte) { fmt.Printf("%s\n", msg) }
	ack, _ := sub.Acknowledgement()
	write(ack)
	w, _ := sub.StartWorker(ctx)
	w.Continue()
	for o := range w.Outcomes() {
		end := o.Err
		if end == nil { // an event
			msg, err := sub.Notification(o.Event)
			if err == nil {
				if msg != nil { // nil: dropped, nothing to write
					write(msg)
				}
				w.Continue()
				continue
			}
			end = err // an invalid event: the stream fails
		}
		msg, reason := sub.Terminal(end)
		write(msg)
		sub.Close(reason)
	}
	fmt.Println("closed:", listen.Classify(sub.CloseReason()))
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"promptsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
	// {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
	// {"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"}}
	// closed: complete
}

// Bad params get a JSON-RPC error with the exact message.
func ExampleParseRequest_invalid() {
	body := []byte(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},
		"notifications":{"resourceSubscriptions":["relative/path"]}}}`)
	req, err := listen.ParseRequest(body)
	fmt.Println((jsonrpc.CodeOf(err) == jsonrpc.CodeInvalidParams))
	fmt.Printf("%s\n", jsonrpc.ErrorResponse(req.ID, err))
	// Output:
	// true
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"subscriptions/listen resourceSubscriptions must contain absolute URI strings"}}
}

// Close reasons are errors: match them with errors.Is or sort them with
// Classify.
func ExampleClassify() {
	for _, reason := range []error{
		listen.ErrComplete,
		listen.Cancelled("client done"),
		listen.Disconnected(errors.New("connection reset")),
		listen.Failed(errors.New("database down")),
		listen.ErrShutdown,
	} {
		fmt.Printf("%-12s %v\n", listen.Classify(reason), reason)
	}
	// Output:
	// complete     listen: subscription complete
	// cancelled    listen: subscription cancelled: client done
	// disconnected listen: client disconnected: connection reset
	// error        listen: subscription failed: database down
	// shutdown     listen: server shutdown
}

// CapabilitiesFrom reads what a server already advertises in server/discover,
// here a go-sdk-like capabilities struct.
func ExampleCapabilitiesFrom() {
	type toolCaps struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}
	type serverCaps struct {
		Tools *toolCaps `json:"tools,omitempty"`
	}
	caps, err := listen.CapabilitiesFrom(&serverCaps{Tools: &toolCaps{ListChanged: true}})
	if err != nil {
		panic(err)
	}
	fmt.Println(caps.ToolsListChanged, caps.ResourcesSubscribe)
	// Output: true false
}
