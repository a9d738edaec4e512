package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultAckTimeout bounds the wait for an upstream's acknowledgement.
const defaultAckTimeout = 10 * time.Second

// Notification is one notification an upstream sent on a listen, after its
// acknowledgement.
type Notification struct {
	// Method is the notification's method (spec.MethodToolsListChanged,
	// spec.MethodResourceUpdated, an extension's...).
	Method string
	// URI is params.uri of a resources/updated notification ("" otherwise).
	URI string
	// Params are the notification's params as sent (nil without).
	Params json.RawMessage
}

// Kind is the notification's kind: one of the core kinds, or
// listen.KindExtension for any other method.
func (n Notification) Kind() listen.Kind {
	switch n.Method {
	case spec.MethodToolsListChanged:
		return listen.KindToolsListChanged
	case spec.MethodPromptsListChanged:
		return listen.KindPromptsListChanged
	case spec.MethodResourcesListChanged:
		return listen.KindResourcesListChanged
	case spec.MethodResourceUpdated:
		return listen.KindResourceUpdated
	}
	return listen.KindExtension
}

// Stream is one acknowledged listen on an upstream: Open returns it once
// the upstream's acknowledgement arrived and was checked. It is read by
// one goroutine (Next); Close may be called from any.
type Stream struct {
	id       jsonrpc.ID
	msgs     messages
	accepted listen.Filter
	ended    atomic.Bool
}

// OpenOptions configure Open.
type OpenOptions struct {
	// ClientInfo is sent as the request's clientInfo (nil: none).
	ClientInfo *listen.Implementation
	// ClientCapabilities are sent as the request's clientCapabilities
	// (nil: an empty object).
	ClientCapabilities map[string]any
	// AckTimeout bounds the wait for the acknowledgement (past it, an
	// error wrapping ErrDropped); zero means 10 s.
	AckTimeout time.Duration
}

var nextID atomic.Int64

// Open sends a subscriptions/listen for filter on t and waits for its
// acknowledgement, which it checks: it must be the first message of the
// listen, tagged with its id, and accept a subset of filter (a
// subset as listen.Filter defines it). It fails with the upstream's *jsonrpc.Error, an
// error wrapping ErrDropped (not reached, cut before the acknowledgement,
// no acknowledgement within AckTimeout), ErrCompleted (completed at once),
// ErrProtocol, or ctx's error.
func Open(ctx context.Context, t Transport, filter listen.Filter, opts OpenOptions) (*Stream, error) {
	id := jsonrpc.IntID(nextID.Add(1))
	body, err := listenRequest(id, filter, opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.AckTimeout
	if timeout <= 0 {
		timeout = defaultAckTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msgs, err := t.open(actx, id, body)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			return nil, errAckTimeout
		}
		return nil, err
	}
	// The acknowledgement is read on this goroutine; the context's end
	// closes msgs, which releases the read.
	timedOut := atomic.Bool{}
	stop := context.AfterFunc(actx, func() {
		timedOut.Store(ctx.Err() == nil)
		msgs.Close()
	})
	s := &Stream{id: id, msgs: msgs}
	raw, err := msgs.Next()
	if !stop() {
		msgs.Close()
		if timedOut.Load() {
			return nil, errAckTimeout
		}
		return nil, ctx.Err()
	}
	if err != nil {
		msgs.Close()
		return nil, err
	}
	m, err := s.decode(raw)
	if err != nil {
		msgs.Close()
		return nil, err
	}
	if m.end != nil {
		msgs.Close()
		return nil, m.end
	}
	if m.Method != spec.MethodAcknowledged {
		msgs.Close()
		return nil, fmt.Errorf("%w: first message is %q, not the acknowledgement", ErrProtocol, m.Method)
	}
	var p struct {
		Notifications listen.Filter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Notifications == nil {
		msgs.Close()
		return nil, fmt.Errorf("%w: acknowledgement without notifications", ErrProtocol)
	}
	if !core.FilterSubsetOf(p.Notifications, filter) {
		msgs.Close()
		return nil, fmt.Errorf("%w: acknowledgement accepts more than was asked", ErrProtocol)
	}
	s.accepted = p.Notifications
	return s, nil
}

// listenRequest is the JSON-RPC request of a listen.
func listenRequest(id jsonrpc.ID, filter listen.Filter, opts OpenOptions) ([]byte, error) {
	caps := opts.ClientCapabilities
	if caps == nil {
		caps = map[string]any{}
	}
	meta := map[string]any{
		spec.MetaProtocolVersion:    spec.ProtocolVersion,
		spec.MetaClientCapabilities: caps,
	}
	if opts.ClientInfo != nil {
		meta[spec.MetaClientInfo] = opts.ClientInfo
	}
	if filter == nil {
		filter = listen.Filter{}
	}
	return json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"method":  spec.MethodListen,
		"params":  map[string]any{"_meta": meta, "notifications": filter},
	})
}

// Accepted is the filter the upstream acknowledged.
func (s *Stream) Accepted() listen.Filter { return s.accepted }

// Next returns the next notification. The listen's end is an error:
// ErrCompleted (the upstream's completion), the upstream's *jsonrpc.Error,
// an error wrapping ErrDropped (the connection, or a silence over the idle
// timeout), ErrProtocol, or ErrClosed after Close. After an
// error the stream is closed and every later Next returns ErrClosed.
func (s *Stream) Next() (Notification, error) {
	if s.ended.Load() {
		return Notification{}, ErrClosed
	}
	raw, err := s.msgs.Next()
	if err != nil {
		s.end()
		return Notification{}, err
	}
	m, err := s.decode(raw)
	if err == nil && m.end != nil {
		err = m.end
	}
	if err == nil && m.Method == spec.MethodAcknowledged {
		err = fmt.Errorf("%w: a second acknowledgement", ErrProtocol)
	}
	if err != nil {
		s.end()
		return Notification{}, err
	}
	n := Notification{Method: m.Method, Params: m.Params}
	if m.Method == spec.MethodResourceUpdated {
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.URI == "" {
			s.end()
			return Notification{}, fmt.Errorf("%w: resources/updated without a uri", ErrProtocol)
		}
		n.URI = p.URI
	}
	return n, nil
}

func (s *Stream) end() {
	s.ended.Store(true)
	s.msgs.Close()
}

// Close ends the listen (the upstream sees a cancellation). It is
// idempotent and releases a blocked Next, which returns ErrClosed.
func (s *Stream) Close() {
	s.ended.Store(true)
	s.msgs.Close()
}

// message is one decoded message of a listen.
type message struct {
	Method string
	Params json.RawMessage
	end    error // the terminal message's meaning: ErrCompleted or a *jsonrpc.Error
}

// decode reads one message of the listen and checks it belongs to it.
func (s *Stream) decode(raw []byte) (message, error) {
	var w struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return message{}, fmt.Errorf("%w: not a JSON-RPC message", ErrProtocol)
	}
	switch {
	case w.Method == "" && (w.Result != nil || w.Error != nil):
		if id, ok := jsonrpc.ParseID(w.ID); !ok || id != s.id {
			return message{}, fmt.Errorf("%w: a response to another request", ErrProtocol)
		}
		if w.Error != nil {
			if e := wireError(raw); e != nil {
				return message{end: e}, nil
			}
			return message{}, fmt.Errorf("%w: malformed error", ErrProtocol)
		}
		return message{end: ErrCompleted}, nil
	case w.Method == spec.MethodCancelled: // stdio: the server ended it
		return message{end: ErrCompleted}, nil
	case w.Method == "" || w.ID != nil:
		return message{}, fmt.Errorf("%w: not a notification", ErrProtocol)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(w.Params) > 0 && json.Unmarshal(w.Params, &p) != nil {
		return message{}, fmt.Errorf("%w: params of %q are not an object", ErrProtocol, w.Method)
	}
	if id, ok := jsonrpc.ParseID(p.Meta[spec.MetaSubscriptionID]); !ok || id != s.id {
		return message{}, fmt.Errorf("%w: %q tagged with another subscription id", ErrProtocol, w.Method)
	}
	return message{Method: w.Method, Params: bytes.Clone(w.Params)}, nil
}
