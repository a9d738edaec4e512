package streamhttp

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/echo"
	"github.com/mcplisten/listen/jsonrpc"
)

// Exact messages of the JSON-RPC errors this package writes itself. The
// params, parse and open errors carry the core's exact messages.
const (
	msgMethodNotAllowed = "Method not allowed: subscriptions/listen is served over POST"
	MsgForbidden        = "Forbidden: invalid Origin or Host"
	MsgUnauthorized     = "Unauthorized"
	msgBodyTooLarge     = "Request body too large"
	msgBodyUnreadable   = "Invalid request: the request body could not be read"
	msgBodyTimeout      = "Request timeout: the request body was not received in time"
)

// Header names of MCP 2026-07-28 Streamable HTTP.
const (
	// headerProtocolVersion carries the request's protocol version; it must
	// equal the body's _meta io.modelcontextprotocol/protocolVersion.
	headerProtocolVersion = "MCP-Protocol-Version"
	// headerMethod carries the request's JSON-RPC method; it must equal the
	// body's method. Front routes on it.
	headerMethod = "Mcp-Method"
)

// headerMismatch returns -32020 in the form of the specification's example:
// "Header mismatch: Mcp-Method header value 'a' does not match body value 'b'".
func headerMismatch(name, header, body string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeHeaderMismatch,
		"Header mismatch: "+name+" header value '"+echo.Cut(header)+"' does not match body value '"+echo.Cut(body)+"'")
}

// headerMissing returns -32020 for a required header that is absent.
func headerMissing(name string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: missing "+name+" header")
}

// statusOf maps a JSON-RPC error code to the HTTP status of its response:
// -32601 is 404 (MCP: an unimplemented method), -32603 is 500, everything
// else (parse, request, params, header, capability, version and a source's
// own codes) is 400.
func statusOf(code int) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// refusalStatus is the HTTP status of a listen the listen.Server refused
// with err (Slot.Admit, Slot.Open), and the Retry-After delay (zero for
// none): capacity and drain refusals carry retryAfter (listen.Options.
// RetryAfter), 503 over MaxStreams and while draining, 429 over a
// per-client limit or a Quota; an expired credential is 401; any other
// error is mapped by its JSON-RPC code (statusOf), 500 when it has none.
func refusalStatus(err error, retryAfter time.Duration) (status int, after time.Duration) {
	switch {
	case errors.Is(err, listen.ErrOverQuota):
		return http.StatusTooManyRequests, retryAfter
	case errors.Is(err, listen.ErrShutdown), errors.Is(err, listen.ErrOverloaded):
		return http.StatusServiceUnavailable, retryAfter
	case errors.Is(err, listen.ErrExpired):
		return http.StatusUnauthorized, 0
	}
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return http.StatusInternalServerError, 0
	}
	return statusOf(we.Code), 0
}

// reply is what a request gets instead of a stream: an error response
// (refuse), 202 Accepted without a body for a client notification
// (acceptedNotification), or nothing at all once the client is gone
// (noReply).
type reply struct {
	status int // 0: nothing is written
	id     jsonrpc.ID
	err    *jsonrpc.Error // nil: no body
	header http.Header
	// req is the refused listen, when it was read (for OnRefuse, which
	// gets one holding the id and the Transport otherwise).
	req *listen.Request
	// reported is set when the Server already told OnRefuse (its own
	// refusals: Admit, Open).
	reported bool
}

// refuse is the error response err with status, echoing id.
func refuse(status int, id jsonrpc.ID, err *jsonrpc.Error) *reply {
	return &reply{status: status, id: id, err: err}
}

// acceptedNotification is the answer to a client notification: 202, no
// body.
func acceptedNotification() *reply { return &reply{status: http.StatusAccepted} }

// noReply writes nothing: the request was reset or its client left.
func noReply() *reply { return &reply{} }

// write sends the reply: an error response as an application/json
// JSON-RPC error response, reported to h's Server's OnRefuse (h may be nil: Front
// with another listen handler).
func (f *reply) write(h *Handler, w http.ResponseWriter, r *http.Request) {
	if f.status == 0 { // noReply
		return
	}
	if f.err == nil { // acceptedNotification
		w.WriteHeader(f.status)
		return
	}
	if h != nil && !f.reported {
		req := f.req
		if req == nil { // not read: its transport is known all the same
			req = &listen.Request{ID: f.id}
		}
		if req.Transport.Kind == "" {
			req.Transport = listen.Transport{Kind: TransportKind, RemoteAddr: r.RemoteAddr, Header: r.Header}
		}
		h.srv.Refused(req, f.err)
	}
	body := jsonrpc.ErrorResponse(f.id, f.err)
	hdr := w.Header()
	for k, vs := range f.header {
		for _, v := range vs {
			hdr.Add(k, v)
		}
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
}
