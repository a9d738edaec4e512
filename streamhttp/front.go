package streamhttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/jsonobj"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultFrontMaxBodyBytes is the default FrontOptions.MaxBodyBytes (512
// KiB): the body of an MCP request other than a listen (a tools/call with
// its arguments, a client's answer to the server). A body that has not fully
// arrived holds what its client sent (plus at most 16 KiB), so 50 unfinished
// bodies near the limit hold about 26 MB until ReadTimeout cuts them. Raise
// it for tool calls that carry files inline.
const defaultFrontMaxBodyBytes = 512 << 10

// Front returns a handler for one MCP endpoint that sends every
// subscriptions/listen to listenHandler (normally a *Handler) and every
// other request to other, such as the go-sdk's StreamableHTTPHandler, with
// the same protection for both. A nil other answers every other request with
// 404. Front panics if listenHandler is nil.
//
// A POST is a listen when its Mcp-Method header says so (it then goes to
// listenHandler at once, which reads and checks it), or when its body's
// method is subscriptions/listen whatever its headers (a single message, or
// any member of a batch): such a listen never reaches other, and
// listenHandler answers it as it would (-32020 for a missing or wrong
// Mcp-Method header, with RequireHeaders). Every other request gets, before
// other sees it:
//
//   - the Origin and Host check, that of listenHandler when it is a *Handler
//     (Handler.CheckOrigin: its AllowedHosts, AllowedOrigins and
//     CheckOrigin), else DefaultCheckOrigin: 403 with -32600 "Forbidden:
//     invalid Origin or Host" and no id, as on a listen;
//   - a bounded read of its body: over FrontOptions.MaxBodyBytes 413
//     (-32600 "Request body too large"), not received within ReadTimeout 408
//     (-32600 "Request timeout: the request body was not received in time";
//     on HTTP/1.x the connection is then closed), unreadable 400. The read
//     deadline is set before the check (so that on HTTP/1.x it also bounds
//     net/http's discarding of the body of a request the check refuses)
//     and cleared once the body has been read; a request without a body (a
//     GET or DELETE) gets none, so neither a long-lived GET stream nor a
//     long tool call is ever cut by it. other then reads the same bytes
//     from the request's Body, and FrontMessage gives it the message
//     already parsed;
//   - a bound on the ids of its body: a message (the body's, or a member
//     of a batch; a request, a notification or a response) whose id is
//     longer than FrontOptions.MaxIDBytes is refused with 400 and -32600
//     "Invalid request: id must be at most <N> bytes" without an id, so
//     that other never keeps nor repeats it.
//
// Refusals are reported to the *Handler's Server (OnRefuse). FrontWith chooses
// another check, or none, and other limits. The request line and headers,
// read before Front runs, are the http.Server's to bound, for other as for
// listens: set its ReadHeaderTimeout and MaxHeaderBytes (see Options).
func Front(listenHandler, other http.Handler) http.Handler {
	return FrontWith(listenHandler, other, FrontOptions{})
}

// FrontOptions configure FrontWith. The zero value is Front's.
type FrontOptions struct {
	// CheckOrigin, if set, checks every request routed to other instead
	// (an error refuses it with 403). When listenHandler is a *Handler
	// wrapped in middleware, pass that Handler's CheckOrigin method so that
	// both get the same rules.
	CheckOrigin func(r *http.Request) error
	// Unchecked routes the requests for other without the Origin and Host
	// check. other must then validate their Origin itself (the go-sdk's
	// StreamableHTTPOptions.CrossOriginProtection, for one). Their bodies
	// are bounded all the same.
	Unchecked bool
	// MaxBodyBytes bounds the body of every request Front reads (all but
	// those its Mcp-Method header marks as listens, which listenHandler
	// bounds). Zero means defaultFrontMaxBodyBytes (512 KiB). FrontWith
	// panics if it is negative.
	MaxBodyBytes int64
	// ReadTimeout bounds the time to read a request's body, from the moment
	// Front starts serving it. Zero means listenHandler's ReadTimeout when
	// it is a *Handler, else defaultReadTimeout (10 s). FrontWith panics if
	// it is negative.
	ReadTimeout time.Duration
	// MaxIDBytes bounds the id of every message of a body Front reads
	// (see listen.Options.MaxIDBytes). Zero means listenHandler's
	// Listen.MaxIDBytes when it is a *Handler, else 256. FrontWith panics
	// if it is negative.
	MaxIDBytes int
}

// FrontWith is Front with the check and the limits of the requests routed
// to other chosen by opts.
func FrontWith(listenHandler, other http.Handler, opts FrontOptions) http.Handler {
	if listenHandler == nil {
		panic("streamhttp: Front needs a listen handler")
	}
	if opts.MaxBodyBytes < 0 || opts.ReadTimeout < 0 || opts.MaxIDBytes < 0 {
		panic(fmt.Sprintf("streamhttp: negative FrontOptions limit (MaxBodyBytes %d, ReadTimeout %v, MaxIDBytes %d)", opts.MaxBodyBytes, opts.ReadTimeout, opts.MaxIDBytes))
	}
	if other == nil {
		other = http.NotFoundHandler()
	}
	f := &front{listen: listenHandler, other: other, maxBody: opts.MaxBodyBytes, readTimeout: opts.ReadTimeout, maxID: opts.MaxIDBytes}
	f.h, _ = listenHandler.(*Handler)
	switch {
	case opts.Unchecked:
	case opts.CheckOrigin != nil:
		f.check = opts.CheckOrigin
	case f.h != nil:
		f.check = f.h.CheckOrigin
	default:
		f.check = DefaultCheckOrigin
	}
	if f.maxBody == 0 {
		f.maxBody = defaultFrontMaxBodyBytes
	}
	if f.maxID == 0 && f.h != nil {
		f.maxID = f.h.srv.Options().MaxIDBytes
	}
	if f.maxID <= 0 {
		f.maxID = core.DefaultMaxIDBytes
	}
	if f.readTimeout == 0 {
		f.readTimeout = defaultReadTimeout
		if f.h != nil {
			f.readTimeout = f.h.opts.ReadTimeout
		}
	}
	return f
}

type front struct {
	listen, other http.Handler
	// h is listen, if it is a *Handler (its Server's OnRefuse hears of refusals).
	h *Handler
	// check checks the requests for other; nil: none.
	check       func(r *http.Request) error
	maxBody     int64
	readTimeout time.Duration
	maxID       int
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isListen(r) {
		f.listen.ServeHTTP(w, r)
		return
	}
	// A request without a body gets no read deadline, which would otherwise
	// cut a long-lived GET stream. One with a body gets it before the check,
	// so that it also bounds, on HTTP/1.x, net/http's discarding of the
	// unread body of a request the check refuses.
	hasBody := r.Body != nil && r.Body != http.NoBody
	rc := http.NewResponseController(w)
	if hasBody {
		_ = rc.SetReadDeadline(time.Now().Add(f.readTimeout))
	}
	if f.check != nil {
		if err := f.check(r); err != nil {
			refuse(http.StatusForbidden, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgForbidden).WithCause(err)).write(f.h, w, r)
			return
		}
	}
	if !hasBody {
		f.other.ServeHTTP(w, r)
		return
	}
	body, refused := readBody(w, r, f.maxBody)
	if refused != nil {
		refused.write(f.h, w, r)
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	m, err := jsonrpc.ParseMessageMaxID(body, f.maxID)
	parsed := err == nil
	if !parsed && !(jsonrpc.CodeOf(err) == jsonrpc.CodeParseError) && oversizedID(body, f.maxID) {
		// Read as a message, or as JSON (a batch, a response): no id over
		// the bound goes further.
		refuse(http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, core.IDTooLarge(f.maxID))).write(f.h, w, r)
		return
	}
	if r.Method == http.MethodPost && isListenBody(body, m, parsed, f.maxID) {
		// Without FrontMessage: a stream keeps its request's context values
		// for its whole life (see stream.serving), and would keep the message's
		// params with them.
		r = r.WithContext(r.Context())
		r.Body = &frontBody{b: body}
		f.listen.ServeHTTP(w, r)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), frontKey{}, &frontRead{msg: m, ok: parsed}))
	r.Body = &frontBody{b: body}
	f.other.ServeHTTP(w, r)
}

// frontBody is the Body of a request whose body Front has read: the same
// bytes, let go of once read to the end, so that a handler that keeps the
// request for a whole stream (a listen served inside net/http) does not keep
// its body too.
type frontBody struct{ b []byte }

func (fb *frontBody) Read(p []byte) (int, error) {
	if len(fb.b) == 0 {
		fb.b = nil
		return 0, io.EOF
	}
	n := copy(p, fb.b)
	if fb.b = fb.b[n:]; len(fb.b) == 0 {
		fb.b = nil
	}
	return n, nil
}

func (fb *frontBody) Close() error { return nil }

// frontKey is the context key of a request's frontRead.
type frontKey struct{}

// frontRead is what Front parsed of a request's body.
type frontRead struct {
	msg jsonrpc.Message
	ok  bool
}

// FrontMessage returns the JSON-RPC message of r's body as Front parsed it
// (with the library's parser: jsonrpc.ParseMessage), for the other handler
// behind Front; ok is false if Front did not read r's body (a request
// without a body, a listen, or a request not served by Front) or its body is
// not a single valid JSON-RPC request or notification (a batch, malformed
// JSON, a response).
func FrontMessage(r *http.Request) (m jsonrpc.Message, ok bool) {
	fr, _ := r.Context().Value(frontKey{}).(*frontRead)
	if fr == nil {
		return jsonrpc.Message{}, false
	}
	return fr.msg, fr.ok
}

// oversizedID reports whether body, valid JSON, is an object or an array
// of objects (a batch) of which one has an "id" member longer than max
// bytes.
func oversizedID(body []byte, max int) bool {
	body = bytes.TrimSpace(body)
	if len(body) <= max {
		return false
	}
	if body[0] == '{' {
		return objectIDTooLong(body, max)
	}
	found := false
	jsonobj.Elements(body, func(elem []byte) bool {
		found = elem[0] == '{' && objectIDTooLong(elem, max)
		return !found
	})
	return found
}

// objectIDTooLong reports whether the JSON object obj has an "id" member
// (named exactly) longer than max bytes.
func objectIDTooLong(obj []byte, max int) bool {
	long := false
	jsonobj.Each(obj, func(m jsonobj.Member) bool {
		long = m.Is("id") && core.IDTooLong(m.Value, max)
		return !long
	})
	return long
}

// isListenBody reports whether body, parsed as m (parsed reports whether it
// is one valid message), is a subscriptions/listen: the message itself, or
// any member of a JSON-RPC batch. A batch is walked in place (jsonobj), and
// only a member that names the method is parsed, so that a batch of many
// tiny members costs no allocation per member.
func isListenBody(body []byte, m jsonrpc.Message, parsed bool, maxID int) bool {
	if parsed {
		return m.Method == spec.MethodListen
	}
	if !jsonobj.Valid(body) {
		return false
	}
	found := false
	jsonobj.Elements(body, func(elem []byte) bool {
		if namesListen(elem) {
			bm, err := jsonrpc.ParseMessageMaxID(elem, maxID)
			found = err == nil && bm.Method == spec.MethodListen
		}
		return !found
	})
	return found
}

// namesListen reports whether the JSON value v may be a listen: an object
// whose method member is "subscriptions/listen", or a string with an escape,
// which jsonrpc.ParseMessage decodes.
func namesListen(v []byte) bool {
	may := false
	jsonobj.Each(v, func(mem jsonobj.Member) bool {
		if !mem.Is("method") {
			return true
		}
		may = string(mem.Value) == `"`+spec.MethodListen+`"` || bytes.IndexByte(mem.Value, '\\') >= 0
		return false
	})
	return may
}

// isListen reports whether r's headers route it as a listen: a POST whose
// Mcp-Method header is exactly "subscriptions/listen" (header values are
// case-sensitive; surrounding spaces are ignored). Front also routes as a
// listen a POST whose body is one, whatever its headers.
func isListen(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	m, ok := header(r, headerMethod)
	return ok && m == spec.MethodListen
}
