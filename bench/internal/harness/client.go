package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ProtocolVersion is the MCP version every request speaks.
const ProtocolVersion = "2026-07-28"

// meta is the request _meta every 2026-07-28 request carries.
var meta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
}

// newTransport returns the one HTTP/1.1 transport of a measurement: no
// per-host connection limit (every listen holds its own connection for its
// whole life) and a few idle connections kept for the trigger calls.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxConnsPerHost:       0, // no limit
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       time.Minute,
		ResponseHeaderTimeout: 60 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// listenBody is a subscriptions/listen request with id and filter.
func listenBody(id int, filter map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"method":  "subscriptions/listen",
		"params":  map[string]any{"notifications": filter, "_meta": meta},
	})
	return b
}

// setHeaders sets the 2026-07-28 Streamable HTTP request headers.
func setHeaders(h http.Header, method, name string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
}

// kinds of SSE message the harness tells apart.
const (
	msgOther = iota
	msgAck
	msgToolsChanged
	msgResourceUpdated
	msgResult
	msgError
)

var (
	patAck      = []byte(`"notifications/subscriptions/acknowledged"`)
	patTools    = []byte(`"notifications/tools/list_changed"`)
	patResource = []byte(`"notifications/resources/updated"`)
	patResult   = []byte(`"result"`)
	patError    = []byte(`"error"`)
	dataPrefix  = []byte("data:")
)

// classify tells what an SSE data line (or its first bufio chunk) carries.
// Both servers put "method" before "params", so a notification's method is
// always in the first chunk.
func classify(data []byte) int {
	switch {
	case bytes.Contains(data, patTools):
		return msgToolsChanged
	case bytes.Contains(data, patResource):
		return msgResourceUpdated
	case bytes.Contains(data, patAck):
		return msgAck
	case bytes.Contains(data, patError) && !bytes.Contains(data, []byte(`"method"`)):
		return msgError
	case bytes.Contains(data, patResult):
		return msgResult
	}
	return msgOther
}

// lineReader reads SSE lines of any length with a bounded buffer: a line
// longer than the buffer yields its first chunk, the rest is skipped.
type lineReader struct {
	br    *bufio.Reader
	first []byte
	bytes int64 // bytes read so far
}

func newLineReader(r io.Reader, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size)}
}

// next returns the next line's first chunk (without its line break) and
// the time its end arrived.
func (l *lineReader) next() ([]byte, time.Time, error) {
	line, err := l.br.ReadSlice('\n')
	l.bytes += int64(len(line))
	if errors.Is(err, bufio.ErrBufferFull) {
		l.first = append(l.first[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.br.ReadSlice('\n')
			l.bytes += int64(len(line))
		}
		line = l.first
	}
	now := time.Now()
	if err != nil {
		return nil, now, err
	}
	return bytes.TrimRight(line, "\r\n"), now, nil
}

// nextData returns the next SSE data line's payload start, its kind and arrival.
func (l *lineReader) nextData() ([]byte, int, time.Time, error) {
	for {
		line, at, err := l.next()
		if err != nil {
			return nil, msgOther, at, err
		}
		if d, ok := bytes.CutPrefix(line, dataPrefix); ok {
			return d, classify(d), at, nil
		}
	}
}

// board records, per trigger round and stream, when the round's notification
// arrived. A stream's k-th notification of the watched kind belongs to round k.
type board struct {
	kind    int
	streams int
	at      [][]int64 // [round][stream] UnixNano of arrival, 0 = none
	left    []atomic.Int64
	done    []chan struct{}
	// extra counts watched notifications beyond the last round.
	extra atomic.Int64
}

func newBoard(kind, rounds, streams int) *board {
	b := &board{kind: kind, streams: streams, at: make([][]int64, rounds),
		left: make([]atomic.Int64, rounds), done: make([]chan struct{}, rounds)}
	for k := range rounds {
		b.at[k] = make([]int64, streams)
		b.left[k].Store(int64(streams))
		b.done[k] = make(chan struct{})
	}
	return b
}

// arrive records stream i's round k notification.
func (b *board) arrive(k, i int, at time.Time) {
	if k >= len(b.at) {
		b.extra.Add(1)
		return
	}
	b.at[k][i] = at.UnixNano()
	if b.left[k].Add(-1) == 0 {
		close(b.done[k])
	}
}

// wait waits for every stream's round k notification.
func (b *board) wait(ctx context.Context, k int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.done[k]:
		return nil
	case <-t.C:
		return fmt.Errorf("round %d: %d of %d streams got no notification within %v", k, b.left[k].Load(), b.streams, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// streams is a set of open listen streams read by one goroutine each.
type streams struct {
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client
	url    string
	board  *board
	bufSz  int

	wg sync.WaitGroup
	// ended counts streams whose response ended (EOF or error).
	ended atomic.Int64
	// closing is set before the harness ends the streams itself.
	closing atomic.Bool
	mu      sync.Mutex
	// unexpected records the first problems seen on streams after their ack.
	unexpected []string
}

func newStreams(parent context.Context, client *http.Client, url string, b *board, bufSz int) *streams {
	ctx, cancel := context.WithCancel(parent)
	return &streams{ctx: ctx, cancel: cancel, client: client, url: url, board: b, bufSz: bufSz}
}

func (s *streams) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unexpected) < 5 {
		s.unexpected = append(s.unexpected, fmt.Sprintf(format, args...))
	}
}

// errRefused is an open refused with HTTP 503 (capacity).
var errRefused = errors.New("refused with 503")

// open opens stream i and waits for its acknowledgement, then reads it in
// its own goroutine until it ends.
func (s *streams) open(i int, filter map[string]any) error {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.url, bytes.NewReader(listenBody(i+1, filter)))
	if err != nil {
		return err
	}
	setHeaders(req.Header, "subscriptions/listen", "")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			return fmt.Errorf("%w: %s", errRefused, body)
		}
		return fmt.Errorf("listen %d: HTTP %d: %s", i, resp.StatusCode, body)
	}
	lr := newLineReader(resp.Body, s.bufSz)
	d, kind, _, err := lr.nextData()
	if err != nil || kind != msgAck {
		resp.Body.Close()
		return fmt.Errorf("listen %d: first message is not the acknowledgement: %q %v", i, trunc(d), err)
	}
	s.wg.Add(1)
	go s.read(i, resp.Body, lr) // ends at the body's end; close cancels and waits
	return nil
}

func (s *streams) read(i int, body io.ReadCloser, lr *lineReader) {
	defer s.wg.Done()
	defer body.Close()
	round := 0
	for {
		d, kind, at, err := lr.nextData()
		if err != nil {
			s.ended.Add(1)
			if !s.closing.Load() {
				s.note("stream %d ended early: %v", i, err)
			}
			return
		}
		switch kind {
		case s.board.kind:
			s.board.arrive(round, i, at)
			round++
		case msgToolsChanged, msgResourceUpdated:
			// Another kind than the one watched: not expected here.
			s.note("stream %d: unexpected %q", i, trunc(d))
		case msgError:
			s.note("stream %d: error %q", i, trunc(d))
		}
	}
}

// close ends every stream and waits for their goroutines.
func (s *streams) close() {
	s.closing.Store(true)
	s.cancel()
	s.wg.Wait()
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// openAll opens n streams with at most conc being opened at once. It
// returns when every open has finished: the number opened, refused (503)
// and the time from the first request to the last acknowledgement.
func (s *streams) openAll(n, conc int, filter map[string]any) (opened, refused int, elapsed time.Duration, err error) {
	var next, nOpened, nRefused atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	startAt := time.Now()
	var lastAck atomic.Int64
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				switch err := s.open(i, filter); {
				case err == nil:
					nOpened.Add(1)
					now := time.Now().UnixNano()
					for {
						old := lastAck.Load()
						if now <= old || lastAck.CompareAndSwap(old, now) {
							break
						}
					}
				case errors.Is(err, errRefused):
					nRefused.Add(1)
				default:
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop opening
				}
			}
		}()
	}
	wg.Wait()
	if la := lastAck.Load(); la > 0 {
		elapsed = time.Unix(0, la).Sub(startAt)
	}
	return int(nOpened.Load()), int(nRefused.Load()), elapsed, firstErr
}

// callTool calls a tool and reads its whole result.
func callTool(ctx context.Context, client *http.Client, url string, id int, name string, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"method":  "tools/call",
		"params":  map[string]any{"name": name, "arguments": args, "_meta": meta},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	setHeaders(req.Header, "tools/call", name)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tools/call %s: HTTP %d: %s", name, resp.StatusCode, trunc(b))
	}
	if !bytes.Contains(b, []byte(`"result"`)) || bytes.Contains(b, []byte(`"isError":true`)) {
		return fmt.Errorf("tools/call %s: %s", name, trunc(b))
	}
	return nil
}

// rawListen sends a listen request on its own connection and never reads
// the response: a client that stopped reading its socket. rcvBuf > 0 sets
// the socket's SO_RCVBUF before connecting.
func rawListen(ctx context.Context, addr string, id int, filter map[string]any, rcvBuf int) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if rcvBuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	body := listenBody(id, filter)
	var req bytes.Buffer
	req.WriteString("POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\n")
	h := http.Header{}
	setHeaders(h, "subscriptions/listen", "")
	_ = h.Write(&req)
	req.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	req.Write(body)
	if _, err := c.Write(req.Bytes()); err != nil {
		c.Close()
		return nil, err
	}
	return c.(*net.TCPConn), nil
}
