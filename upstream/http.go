package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultMaxMessageBytes bounds one message from an upstream (an SSE event
// on HTTP, a line on stdio): an acknowledgement naming the most URIs a
// listen may carry (spec.MaxResourceSubscriptions) fits.
const defaultMaxMessageBytes = 1 << 20

// HTTP is the Streamable HTTP transport: each listen is one POST to URL
// whose response is an SSE stream. The zero value of every field but URL
// is a usable default.
type HTTP struct {
	// URL is the upstream's MCP endpoint.
	URL string
	// Client sends the POSTs. Nil means a client of this package's own,
	// with no overall timeout (a listen is long-lived), a 10 s dial and
	// response-header timeout, and TCP keep-alive probes every 5 s after
	// 15 s idle (a dead peer is noticed in about 30 s even when the
	// upstream sends no keep-alive of its own).
	Client *http.Client
	// Header, if set, is added to every POST (an Authorization header,
	// say).
	Header http.Header
	// IdleTimeout is how long a stream may stay silent (no event, no
	// keep-alive comment) before it is taken for lost (ErrDropped). Zero
	// means automatic: no timeout until the upstream's first keep-alive
	// comment, then 1.75 times the longest silence seen before one of its
	// keep-alives (at least one second), on that stream and, from their
	// start, on this transport's later streams: an upstream that sends
	// keep-alives every 15 s (this library's, 15 to 18.75 s apart) is
	// taken for lost after 26 to 33 s of silence, and one that sends none is
	// never timed out (TCP keep-alive still notices a dead peer). Negative
	// disables it.
	IdleTimeout time.Duration
	// MaxMessageBytes bounds one SSE event (and a JSON answer): a larger
	// one ends the listen with ErrProtocol. Zero means 1 MiB.
	MaxMessageBytes int

	// learned is the automatic idle timeout learned on this upstream's
	// streams (ns; 0 until a keep-alive was seen): a new stream is armed
	// with it from its start.
	learned atomic.Int64
}

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy: http.ProxyFromEnvironment,
	DialContext: (&net.Dialer{
		Timeout:         10 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
	}).DialContext,
	ForceAttemptHTTP2:     true,
	ResponseHeaderTimeout: 10 * time.Second,
	MaxIdleConnsPerHost:   4,
	IdleConnTimeout:       90 * time.Second,
}}

// Listen implements Transport.
func (t *HTTP) open(ctx context.Context, id jsonrpc.ID, request []byte) (messages, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, t.URL, bytes.NewReader(request))
	if err != nil {
		return nil, err
	}
	for k, vs := range t.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	client := t.Client
	if client == nil {
		client = defaultClient
	}
	// The request's own context is cancelled by Close: ctx only bounds
	// the wait for the response's headers.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	req = req.WithContext(rctx)
	stop := context.AfterFunc(ctx, cancel)
	resp, err := client.Do(req)
	stopped := stop()
	if err != nil {
		cancel()
		if !stopped { // ctx ended the wait
			return nil, ctx.Err()
		}
		return nil, dropped(err)
	}
	if !stopped { // ctx ended just as the headers came
		resp.Body.Close()
		cancel()
		return nil, ctx.Err()
	}
	max := t.MaxMessageBytes
	if max <= 0 {
		max = defaultMaxMessageBytes
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
		return newSSEMessages(resp.Body, cancel, t.IdleTimeout, &t.learned, max), nil
	case ct == "application/json":
		defer cancel()
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
		if err != nil {
			return nil, dropped(err)
		}
		if len(body) > max {
			return nil, errTooLarge
		}
		if e := wireError(body); e != nil {
			return nil, e
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%w: HTTP status %d", ErrProtocol, resp.StatusCode)
		}
		return &oneMessage{msg: body}, nil
	default:
		resp.Body.Close()
		cancel()
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return nil, fmt.Errorf("%w: HTTP status %d", ErrDropped, resp.StatusCode)
		}
		return nil, fmt.Errorf("%w: HTTP status %d, Content-Type %q", ErrProtocol, resp.StatusCode, ct)
	}
}

// wireError returns the JSON-RPC error of a response, or nil when msg is
// not an error response.
func wireError(msg []byte) *jsonrpc.Error {
	var m struct {
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Error == nil {
		return nil
	}
	e := jsonrpc.NewError(m.Error.Code, m.Error.Message)
	if len(m.Error.Data) > 0 {
		e.Data = m.Error.Data
	}
	return e
}

// oneMessage is a listen answered with one JSON body.
type oneMessage struct {
	mu   sync.Mutex
	msg  []byte
	done bool
}

func (o *oneMessage) Next() ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return nil, ErrClosed
	}
	if o.msg == nil {
		return nil, dropped(io.EOF)
	}
	m := o.msg
	o.msg = nil
	return m, nil
}

func (o *oneMessage) Close() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}

// sseMessages reads the SSE events of one listen's response. The idle
// timer, when armed, closes the body after a silence; every line read
// re-arms it.
type sseMessages struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	rd     *bufio.Reader
	max    int

	fixed    time.Duration // IdleTimeout as configured (0: automatic)
	learned  *atomic.Int64 // the transport's learned timeout (automatic mode)
	timeout  time.Duration // in force: 0 until known (automatic), <0 never
	last     time.Time     // the last line read (automatic mode)
	tmu      sync.Mutex    // guards timer and shutDown
	timer    *time.Timer
	shutDown bool
	silent   atomic.Bool
	closed   atomic.Bool
	once     sync.Once
}

func newSSEMessages(body io.ReadCloser, cancel context.CancelFunc, idle time.Duration, learned *atomic.Int64, max int) *sseMessages {
	s := &sseMessages{body: body, cancel: cancel, rd: bufio.NewReaderSize(body, 4096), max: max, fixed: idle, timeout: idle, learned: learned, last: time.Now()}
	if idle == 0 && learned != nil {
		idle = time.Duration(learned.Load()) // 0 while nothing was learned
		s.timeout = idle
	}
	if idle > 0 {
		s.arm(idle)
	}
	return s
}

func (s *sseMessages) expire() {
	s.silent.Store(true)
	s.shut()
}

// arm (re-)arms the idle timer, unless the stream is shut.
func (s *sseMessages) arm(d time.Duration) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	switch {
	case s.shutDown:
	case s.timer == nil:
		s.timer = time.AfterFunc(d, s.expire)
	default:
		s.timer.Reset(d)
	}
}

func (s *sseMessages) shut() {
	s.once.Do(func() {
		s.tmu.Lock()
		s.shutDown = true
		if s.timer != nil {
			s.timer.Stop()
		}
		s.tmu.Unlock()
		s.cancel()
		s.body.Close()
	})
}

// Close implements messages.
func (s *sseMessages) Close() {
	s.closed.Store(true)
	s.shut()
}

// seen re-arms the idle timer after a line; comment says the line was a
// comment (a keep-alive), which in automatic mode sets the timeout.
func (s *sseMessages) seen(comment bool) {
	now := time.Now()
	if s.fixed == 0 && comment {
		quiet := now.Sub(s.last)
		if t := max(quiet*7/4, time.Second); t > s.timeout {
			s.timeout = t
			if s.learned != nil {
				s.learned.Store(int64(t))
			}
		}
	}
	s.last = now
	if s.timeout > 0 {
		s.arm(s.timeout)
	}
}

// Next implements messages: the data of the next "message" event (or of an
// event without a name).
func (s *sseMessages) Next() ([]byte, error) {
	var data []byte
	hasData := false
	event := ""
	for {
		line, err := s.line()
		if err != nil {
			switch {
			case s.closed.Load():
				return nil, ErrClosed
			case s.silent.Load():
				return nil, errSilent
			case err == errTooLarge:
				return nil, err
			}
			return nil, dropped(err)
		}
		if len(line) == 0 { // the end of an event
			if hasData && (event == "" || event == "message") {
				s.seen(false)
				return data, nil
			}
			s.seen(false)
			data, hasData, event = data[:0], false, ""
			continue
		}
		if line[0] == ':' {
			s.seen(true)
			continue
		}
		s.seen(false)
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if len(data)+len(value)+1 > s.max {
				s.shut()
				return nil, errTooLarge
			}
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			event = string(value)
		}
	}
}

// line reads one line, without its end (LF or CRLF), bounded by max.
func (s *sseMessages) line() ([]byte, error) {
	var long []byte
	for {
		chunk, err := s.rd.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > s.max+2 {
				s.shut()
				return nil, errTooLarge
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil {
			if err == io.EOF && len(chunk) == 0 && len(long) == 0 {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if long != nil {
			chunk = append(long, chunk...)
		}
		if len(chunk) > s.max+2 {
			s.shut()
			return nil, errTooLarge
		}
		return []byte(strings.TrimSuffix(strings.TrimSuffix(string(chunk), "\n"), "\r")), nil
	}
}
