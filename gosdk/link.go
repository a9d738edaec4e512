package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/jsonrpc"
)

// link is an in-process client end of one go-sdk server session: both the
// mcp.Transport given to Server.Connect and the mcp.Connection it returns.
// Messages cross it as values: the session's reader goroutine takes
// requests from toServer, and the server's writes arrive in Write, on the
// sending goroutine; notifications are handed to notify there (it must not
// block). A link starts one goroutine per request the server sends it (a
// keep-alive ping), which ends once the answer is taken or the link is
// closed; Close (idempotent) waits for them.
type link struct {
	notify func(method string, params json.RawMessage)
	// extra is what every request sent to the server carries: the
	// TokenInfo a receiving middleware sees (Options.Token).
	extra *mcp.RequestExtra

	toServer chan sdkjsonrpc.Message
	done     chan struct{}
	once     sync.Once
	// answers counts the goroutines answering the server's requests (Add
	// under mu while done is open, so that none is added once Close waits).
	answers sync.WaitGroup

	mu      sync.Mutex
	nextID  int64
	pending map[sdkjsonrpc.ID]chan *sdkjsonrpc.Response
}

var errLinkClosed = errors.New("gosdk: in-process session closed")

func newLink(notify func(method string, params json.RawMessage), token *auth.TokenInfo) *link {
	if notify == nil {
		notify = func(string, json.RawMessage) {}
	}
	return &link{
		notify:   notify,
		extra:    &mcp.RequestExtra{TokenInfo: token},
		toServer: make(chan sdkjsonrpc.Message),
		done:     make(chan struct{}),
		pending:  make(map[sdkjsonrpc.ID]chan *sdkjsonrpc.Response),
	}
}

// Connect implements mcp.Transport.
func (l *link) Connect(context.Context) (mcp.Connection, error) { return l, nil }

// Read implements mcp.Connection: the next request for the server.
func (l *link) Read(ctx context.Context) (sdkjsonrpc.Message, error) {
	select {
	case m := <-l.toServer:
		return m, nil
	case <-l.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: a message from the server. It never
// blocks on the link.
func (l *link) Write(_ context.Context, msg sdkjsonrpc.Message) error {
	select {
	case <-l.done:
		return errLinkClosed
	default:
	}
	switch m := msg.(type) {
	case *sdkjsonrpc.Response:
		l.mu.Lock()
		ch := l.pending[m.ID]
		delete(l.pending, m.ID)
		l.mu.Unlock()
		if ch != nil {
			ch <- m // buffered: one answer per call
		}
	case *sdkjsonrpc.Request:
		if !m.IsCall() {
			l.notify(m.Method, m.Params)
			return nil
		}
		// A request from the server (a keep-alive ping; this client
		// offers nothing else). Answered from a goroutine of its own: the
		// session's reader might be the one writing.
		var resp *sdkjsonrpc.Response
		if m.Method == "ping" {
			resp = &sdkjsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")}
		} else {
			resp = &sdkjsonrpc.Response{ID: m.ID, Error: &sdkjsonrpc.Error{Code: sdkjsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method}}
		}
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			return errLinkClosed
		default:
		}
		l.answers.Add(1)
		l.mu.Unlock()
		// Ends once the session's reader took the answer, or on Close,
		// which waits for it.
		go func() {
			defer l.answers.Done()
			select {
			case l.toServer <- resp:
			case <-l.done:
			}
		}()
	}
	return nil
}

// Close implements mcp.Connection. It fails every call in flight, and
// returns once the goroutines answering the server's requests have ended.
func (l *link) Close() error {
	l.mu.Lock()
	l.once.Do(func() { close(l.done) })
	l.mu.Unlock()
	l.answers.Wait()
	return nil
}

// SessionID implements mcp.Connection.
func (l *link) SessionID() string { return "" }

// call sends a request to the server and waits for its answer. Its errors
// read "gosdk: in-process <method> ...": an error the server answered with
// is a *callError, which unwraps to a *jsonrpc.Error with its code, message
// and data when the go-sdk answered a JSON-RPC error.
func (l *link) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		// Checked first: with a done ctx, the selects below could still
		// pick the send and then the answer.
		return nil, fmt.Errorf("gosdk: in-process %s: %w", method, err)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan *sdkjsonrpc.Response, 1)
	l.mu.Lock()
	l.nextID++
	id, err := sdkjsonrpc.MakeID(float64(l.nextID))
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.pending[id] = ch
	l.mu.Unlock()
	forget := func() {
		l.mu.Lock()
		delete(l.pending, id)
		l.mu.Unlock()
	}
	select {
	case l.toServer <- &sdkjsonrpc.Request{ID: id, Method: method, Params: raw, Extra: l.extra}:
	case <-l.done:
		forget()
		return nil, errLinkClosed
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("gosdk: in-process %s: %w", method, ctx.Err())
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, answerError(method, r.Error)
		}
		return r.Result, nil
	case <-l.done:
		forget()
		return nil, errLinkClosed
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("gosdk: in-process %s: %w", method, ctx.Err())
	}
}

// callError is the error the go-sdk server answered an in-process call
// with: this library's *jsonrpc.Error for a JSON-RPC error, else the error
// as the server returned it (a middleware's plain error, in process).
type callError struct {
	method string
	err    error
}

func (e *callError) Error() string {
	return "gosdk: in-process " + e.method + " refused: " + e.err.Error()
}

// Unwrap returns err.
func (e *callError) Unwrap() error { return e.err }

// answerError turns the go-sdk's answer error into a *callError.
func answerError(method string, err error) error {
	var we *sdkjsonrpc.Error
	if errors.As(err, &we) {
		e := jsonrpc.NewError(int(we.Code), we.Message)
		e.Data = we.Data
		return &callError{method: method, err: e}
	}
	return &callError{method: method, err: err}
}
