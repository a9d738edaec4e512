package gosdk

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Options configure a Bridge, and the part of NewHandler and NewStdio
// they share.
type Options struct {
	// Hub, Listen, Logger, OnRepublish and CallTimeout are those of
	// adapter.Options. OnRepublish runs on the go-sdk's debounce goroutine
	// for a list change, on the caller's for ResourceUpdated; CallTimeout
	// also bounds the observer's initialize.
	Hub         *hub.Hub
	Listen      listen.Options
	Logger      *slog.Logger
	OnRepublish func(method, uri string, r hub.Report)
	CallTimeout time.Duration
	// Token is the auth.TokenInfo of the in-process calls
	// (RequestExtra.TokenInfo), so that a receiving middleware that refuses
	// requests without a token lets them through. Nil means a TokenInfo
	// with UserID "mcplisten-gosdk" and no scopes or expiration; give a
	// token your middleware accepts if it checks more (scopes, expiry).
	Token *auth.TokenInfo
}

// clientName names the bridge's in-process sessions (in server/discover's
// _meta and in initialize) and is the UserID of the default Options.Token.
const clientName = "mcplisten-gosdk"

// legacyVersion is the protocol version of the observer session: an
// initialize-era session is told every list change without opting in.
const legacyVersion = "2025-11-25"

// probeMeta is the _meta of the bridge's server/discover.
var probeMeta = map[string]any{
	spec.MetaProtocolVersion:    spec.ProtocolVersion,
	spec.MetaClientCapabilities: map[string]any{},
	spec.MetaClientInfo:         map[string]any{"name": clientName, "version": "0"},
}

// NewBridge connects to server: the adapter.Bridge that NewHandler and
// NewStdio serve (use it directly for another transport). It holds two
// in-process sessions of the go-sdk server (client name
// "mcplisten-gosdk", in Server.Sessions; their requests carry
// Options.Token), over a transport that passes messages as Go values: the
// observer, an initialize-era session, which the go-sdk tells every list
// change once its 10 ms debounce has passed (published into the hub on
// that goroutine); and the probe, on which the Bridge runs an in-memory
// server/discover to read the capabilities exactly as advertised (about
// 0.5 ms and 215 KB of garbage in the go-sdk: see adapter.Bridge for
// when). The Bridge's ResourceUpdated tells the listens through the hub
// and older clients through the go-sdk's Server.ResourceUpdated, even
// when the hub refuses uri (the error returned). A listen's URIs cost the
// go-sdk nothing (authorise them with listen.Options.CanRead). NewBridge
// fails if the server does not serve 2026-07-28 or refuses the Bridge's
// calls (see Options.Token), and warns as adapter.NewBridge does.
func NewBridge(ctx context.Context, server *mcp.Server, opts Options) (*adapter.Bridge, error) {
	if server == nil {
		return nil, errors.New("gosdk: nil *mcp.Server")
	}
	s := &sdkServer{server: server, token: opts.Token, timeout: cmp.Or(opts.CallTimeout, 5*time.Second)}
	if s.token == nil {
		s.token = &auth.TokenInfo{UserID: clientName}
	}
	if err := s.connectProbe(ctx); err != nil {
		return nil, err
	}
	return adapter.NewBridge(ctx, adapter.SDK{
		Name:      "gosdk",
		Server:    "the go-sdk server",
		Advertise: "register a tool, prompt or resource, or set ServerOptions.Capabilities",
		Subscribe: "set ServerOptions.SubscribeHandler and UnsubscribeHandler, even ones that only return nil, or Capabilities.Resources.Subscribe",

		Discover:        s.discover,
		Observe:         s.observe,
		ResourceUpdated: s.resourceUpdated,
		Close:           s.close,
	}, adapter.Options{Hub: opts.Hub, Listen: opts.Listen, Logger: opts.Logger, OnRepublish: opts.OnRepublish, CallTimeout: opts.CallTimeout})
}

// Discover runs an in-memory server/discover on server (a session of its
// own, closed before Discover returns) and returns what it advertises. It is
// exact however the capabilities came about: go-sdk v1.8.0 has no exported
// accessor for them, and infers tools, prompts and resources from what is
// registered unless ServerOptions.Capabilities sets them.
func Discover(ctx context.Context, server *mcp.Server) (*adapter.Discovery, error) {
	if server == nil {
		return nil, errors.New("gosdk: nil *mcp.Server")
	}
	s := &sdkServer{server: server, token: &auth.TokenInfo{UserID: clientName}}
	if err := s.connectProbe(ctx); err != nil {
		return nil, err
	}
	return adapter.Discover(ctx, adapter.SDK{Name: "gosdk", Discover: s.discover, Close: s.close})
}

// sdkServer is the go-sdk server as the adapter package reaches it (its
// adapter.SDK): the probe and observer sessions.
type sdkServer struct {
	server  *mcp.Server
	token   *auth.TokenInfo
	timeout time.Duration
	publish func(method, uri string) error

	observer, probe    *link
	obsSess, probeSess *mcp.ServerSession
}

// connectProbe connects the probe session.
func (s *sdkServer) connectProbe(ctx context.Context) error {
	s.probe = newLink(nil, s.token)
	ps, err := s.server.Connect(ctx, s.probe, nil)
	if err != nil {
		_ = s.probe.Close()
		return fmt.Errorf("gosdk: connecting the in-process probe: %w", err)
	}
	s.probeSess = ps
	return nil
}

// discover runs server/discover on the probe session (adapter.SDK.Discover).
func (s *sdkServer) discover(ctx context.Context) (json.RawMessage, error) {
	res, err := s.probe.call(ctx, "server/discover", map[string]any{"_meta": probeMeta})
	var we *jsonrpc.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &we) && we.Code == jsonrpc.CodeUnsupportedProtocolVersion:
		return nil, fmt.Errorf("gosdk: the go-sdk server does not serve protocol version %s, which subscriptions/listen needs (ServerOptions.SupportedProtocolVersions): its server/discover answered %w", spec.ProtocolVersion, we)
	}
	return nil, fmt.Errorf("%w (the bridge's in-process calls carry Options.Token; a receiving middleware must let them through)", err)
}

// observe connects the observer session, whose list changes go to publish
// (adapter.SDK.Observe).
func (s *sdkServer) observe(ctx context.Context, publish func(method, uri string) error) error {
	s.publish = publish
	s.observer = newLink(func(method string, _ json.RawMessage) { _ = publish(method, "") }, s.token)
	os, err := s.server.Connect(ctx, s.observer, nil)
	if err != nil {
		return fmt.Errorf("gosdk: connecting the in-process observer: %w", err)
	}
	s.obsSess = os
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err = s.observer.call(ctx, "initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": clientName, "version": "0"},
	})
	if err != nil {
		return fmt.Errorf("%w (the in-process observer's initialize; its calls carry Options.Token)", err)
	}
	return nil
}

// resourceUpdated tells the listens, through the hub, and the go-sdk's own
// subscribers (adapter.SDK.ResourceUpdated).
func (s *sdkServer) resourceUpdated(ctx context.Context, uri string) error {
	herr := s.publish(spec.MethodResourceUpdated, uri)
	serr := s.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	switch {
	case herr != nil && serr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: %w; the go-sdk's: %w", uri, herr, serr)
	case herr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: %w", uri, herr)
	case serr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: the go-sdk's Server.ResourceUpdated: %w", uri, serr)
	}
	return nil
}

// close ends both in-process sessions and waits for their goroutines
// (adapter.SDK.Close).
func (s *sdkServer) close() error {
	for _, ss := range []*mcp.ServerSession{s.obsSess, s.probeSess} {
		if ss != nil {
			_ = ss.Close()
			_ = ss.Wait()
		}
	}
	for _, l := range []*link{s.observer, s.probe} {
		if l != nil {
			_ = l.Close()
		}
	}
	return nil
}
