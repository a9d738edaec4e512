package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Options configure a Bridge, and the part of NewHandler and NewStdio they
// share: the hub, the listen.Options (every field but the three read from
// the server), the logger, OnRepublish (called on the Bridge's goroutine;
// it must not broadcast on the mcp-go server itself) and the bound of the
// in-process server/discover. See adapter.Options.
type Options = adapter.Options

// clientName names the client of the bridge's in-process server/discover,
// which mcp-go's hooks see.
const clientName = "mcplisten-mcpgo"

// bridgeKey marks the context of the bridge's own requests.
type bridgeKey struct{}

// FromBridge reports whether ctx is that of one of the Bridge's in-process
// requests (its server/discover, which mcp-go's hooks see). An mcp-go hook
// that refuses requests (without a token, say) must let them through:
//
//	hooks.AddOnRequestInitialization(func(ctx context.Context, id any, msg any) error {
//		if mcpgo.FromBridge(ctx) || authorized(ctx) {
//			return nil
//		}
//		return errors.New("unauthorized")
//	})
//
// No client request carries the mark: it is a context value, not a field.
func FromBridge(ctx context.Context) bool {
	v, _ := ctx.Value(bridgeKey{}).(bool)
	return v
}

// sessionIDPrefix begins the session id of the bridge's observer session.
const sessionIDPrefix = "mcplisten-observer-"

// observerSeq numbers the observer sessions of a process.
var observerSeq atomic.Uint64

// NewBridge connects to s: the adapter.Bridge that NewHandler and NewStdio
// serve (use it directly for another transport). It registers a session
// of its own with the mcp-go server (its id begins with
// "mcplisten-observer-"), to which mcp-go hands every broadcast, and which
// never drops one (see the package documentation, No silent loss); a
// goroutine of the Bridge publishes each into the hub. The capabilities
// are read with MCPServer.HandleMessage, which runs the server's hooks
// (see FromBridge). The Bridge's ResourceUpdated is mcp-go's
// SendNotificationToAllClients of notifications/resources/updated, and
// returns once the listens have it; it fails for an empty uri. NewBridge
// fails if the server does not answer server/discover, and warns as
// adapter.NewBridge does.
func NewBridge(ctx context.Context, s *server.MCPServer, opts Options) (*adapter.Bridge, error) {
	if s == nil {
		return nil, errors.New("mcpgo: nil *server.MCPServer")
	}
	x := &sdkServer{server: s}
	return adapter.NewBridge(ctx, adapter.SDK{
		Name:      "mcpgo",
		Server:    "the mcp-go server",
		Advertise: "server.WithToolCapabilities(true), WithPromptCapabilities(true), WithResourceCapabilities(true, true), or AddTool",
		Subscribe: "server.WithResourceCapabilities(true, ...)",

		Discover:        func(ctx context.Context) (json.RawMessage, error) { return discover(ctx, s) },
		Observe:         x.observe,
		ResourceUpdated: x.resourceUpdated,
		Flush:           x.flush,
		Close:           x.close,
	}, opts)
}

// Discover runs an in-memory server/discover on s and returns what it
// advertises: exactly the capabilities a client reads, however they came
// about (mcp-go turns some on as tools, prompts and resources are
// registered). Its Versions are every version mcp-go implements, outside
// any transport (a transport may serve fewer).
func Discover(ctx context.Context, s *server.MCPServer) (*adapter.Discovery, error) {
	if s == nil {
		return nil, errors.New("mcpgo: nil *server.MCPServer")
	}
	return adapter.Discover(ctx, adapter.SDK{Name: "mcpgo", Discover: func(ctx context.Context) (json.RawMessage, error) { return discover(ctx, s) }})
}

// discoverRequest is the bridge's server/discover.
const discoverRequest = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"` + spec.MetaProtocolVersion + `":"` + spec.ProtocolVersion + `","` + spec.MetaClientCapabilities + `":{},` +
	`"` + spec.MetaClientInfo + `":{"name":"` + clientName + `","version":"0"}}}}`

// discover runs server/discover on s with HandleMessage and returns the
// result member of the answer.
func discover(ctx context.Context, s *server.MCPServer) (json.RawMessage, error) {
	resp := s.HandleMessage(context.WithValue(ctx, bridgeKey{}, true), json.RawMessage(discoverRequest))
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: server/discover: encoding the answer: %w", err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("mcpgo: server/discover: decoding the answer: %w", err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("mcpgo: the mcp-go server refused the bridge's in-process server/discover (a hook refusing requests must let those for which mcpgo.FromBridge(ctx) is true through): %w", r.Error)
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return nil, fmt.Errorf("mcpgo: server/discover: no result in %s", raw)
	}
	return r.Result, nil
}

// sdkServer is the mcp-go server as the adapter package reaches it (its
// adapter.SDK): the observer session.
type sdkServer struct {
	server  *server.MCPServer
	obs     *observer
	publish func(method, uri string) error
}

// observe registers the observer session, whose broadcasts go to publish
// (adapter.SDK.Observe).
func (x *sdkServer) observe(ctx context.Context, publish func(method, uri string) error) error {
	x.publish = publish
	x.obs = newObserver(sessionIDPrefix+strconv.FormatUint(observerSeq.Add(1), 10), observerQueue, x.onNotify)
	x.obs.start()
	if err := x.server.RegisterSession(ctx, x.obs); err != nil {
		x.obs.stop()
		x.obs = nil
		return fmt.Errorf("mcpgo: registering the observer session: %w", err)
	}
	return nil
}

// onNotify hands one mcp-go broadcast to publish. It runs on the
// observer's goroutine.
func (x *sdkServer) onNotify(n mcp.JSONRPCNotification) {
	var uri string
	if n.Method == mcp.MethodNotificationResourceUpdated {
		uri, _ = n.Params.AdditionalFields["uri"].(string) // "" is refused, and logged
	}
	_ = x.publish(n.Method, uri)
}

// resourceUpdated broadcasts the update, which the observer republishes,
// and waits for it to reach the hub (adapter.SDK.ResourceUpdated).
func (x *sdkServer) resourceUpdated(_ context.Context, uri string) error {
	if uri == "" {
		return errors.New("mcpgo: ResourceUpdated: empty uri")
	}
	x.server.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
	x.flush()
	return nil
}

// flush returns once every broadcast made before the call has been
// published into the hub (adapter.SDK.Flush).
func (x *sdkServer) flush() {
	if x.obs != nil {
		x.obs.flush()
	}
}

// close unregisters the observer session and ends its goroutine
// (adapter.SDK.Close).
func (x *sdkServer) close() error {
	if x.obs != nil {
		x.server.UnregisterSession(context.Background(), x.obs.id)
		x.obs.stop()
	}
	return nil
}
