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
	"sync"
	"sync/atomic"
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
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       time.Minute,
		ResponseHeaderTimeout: 60 * time.Second,
		DisableCompression:    true,
	}
}

// Post sends a JSON-RPC request with the 2026-07-28 Streamable HTTP headers.
func Post(ctx context.Context, c *http.Client, url string, id int, method, name string, params map[string]any) (*http.Response, error) {
	params["_meta"] = meta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return c.Do(req)
}

// kinds of SSE message the harness tells apart.
const (
	msgOther = iota
	msgAck
	msgToolsChanged
	msgResourceUpdated
	msgEnd // a result or an error: the listen's end
)

// classify tells what an SSE data line (or its first bufio chunk) carries.
// Every server puts "method" before "params", so a notification's method is
// always in the first chunk.
func classify(data []byte) int {
	switch {
	case bytes.Contains(data, []byte(`"notifications/tools/list_changed"`)):
		return msgToolsChanged
	case bytes.Contains(data, []byte(`"notifications/resources/updated"`)):
		return msgResourceUpdated
	case bytes.Contains(data, []byte(`"notifications/subscriptions/acknowledged"`)):
		return msgAck
	case !bytes.Contains(data, []byte(`"method"`)):
		return msgEnd
	}
	return msgOther
}

// nextData returns the next SSE data line's payload (its first 4 KiB at
// most; the rest of a longer line is skipped), its kind and its arrival.
func nextData(br *bufio.Reader) ([]byte, int, time.Time, error) {
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line = bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		at := time.Now()
		if err != nil {
			return nil, msgOther, at, err
		}
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok {
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

// reader returns stream i's message handler: its k-th notification of the
// watched kind arrives in round k.
func (b *board) reader(i int) func([]byte, int, time.Time) {
	round := 0
	return func(_ []byte, kind int, at time.Time) {
		if kind != b.kind {
			return
		}
		if k := round; k >= len(b.at) {
			b.extra.Add(1)
		} else if b.at[k][i] = at.UnixNano(); b.left[k].Add(-1) == 0 {
			close(b.done[k])
		}
		round++
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

// streams is a set of open listen streams read by one goroutine each, which
// hands every message after the acknowledgement to the stream's handler.
type streams struct {
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client
	url    string
	// handler returns stream i's message handler.
	handler func(i int) func(d []byte, kind int, at time.Time)

	wg sync.WaitGroup
	// closing is set before the harness ends the streams itself.
	closing atomic.Bool
	mu      sync.Mutex
	// unexpected records the first problems seen on streams after their ack.
	unexpected []string
}

func newStreams(parent context.Context, client *http.Client, url string, b *board) *streams {
	ctx, cancel := context.WithCancel(parent)
	return &streams{ctx: ctx, cancel: cancel, client: client, url: url, handler: b.reader}
}

// errRefused is an open refused with HTTP 503 (capacity).
var errRefused = errors.New("refused with 503")

// open opens stream i and waits for its acknowledgement, then reads it in
// its own goroutine until it ends.
func (s *streams) open(i int, filter map[string]any) error {
	resp, err := Post(s.ctx, s.client, s.url, i+1, "subscriptions/listen", "", map[string]any{"notifications": filter})
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
	br := bufio.NewReaderSize(resp.Body, 4096)
	if d, kind, _, err := nextData(br); err != nil || kind != msgAck {
		resp.Body.Close()
		return fmt.Errorf("listen %d: first message is not the acknowledgement: %q %v", i, trunc(d), err)
	}
	handle := s.handler(i)
	s.wg.Add(1)
	go func() { // ends at the body's end; close cancels and waits
		defer s.wg.Done()
		defer resp.Body.Close()
		for {
			d, kind, at, err := nextData(br)
			if err != nil {
				if !s.closing.Load() {
					s.note("stream %d ended early: %v", i, err)
					handle(nil, msgEnd, at)
				}
				return
			}
			if kind == msgEnd {
				s.note("stream %d ended: %q", i, trunc(d))
			}
			handle(d, kind, at)
		}
	}()
	return nil
}

func (s *streams) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unexpected) < 5 {
		s.unexpected = append(s.unexpected, fmt.Sprintf(format, args...))
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
	var next, nOpened, nRefused, lastAck atomic.Int64
	var errOnce sync.Once
	var wg sync.WaitGroup
	startAt := time.Now()
	for range min(conc, n) {
		wg.Add(1)
		go func() { // ends when no stream is left to open
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				switch e := s.open(i, filter); {
				case e == nil:
					nOpened.Add(1)
					now := time.Now().UnixNano()
					for old := lastAck.Load(); now > old && !lastAck.CompareAndSwap(old, now); old = lastAck.Load() {
					}
				case errors.Is(e, errRefused):
					nRefused.Add(1)
				default:
					errOnce.Do(func() { err = e })
					next.Store(int64(n)) // stop opening
				}
			}
		}()
	}
	wg.Wait()
	if la := lastAck.Load(); la > 0 {
		elapsed = time.Unix(0, la).Sub(startAt)
	}
	return int(nOpened.Load()), int(nRefused.Load()), elapsed, err
}

// callTool calls a tool and reads its whole result.
func callTool(ctx context.Context, client *http.Client, url string, id int, name string, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	resp, err := Post(ctx, client, url, id, "tools/call", name, map[string]any{"name": name, "arguments": args})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) || bytes.Contains(b, []byte(`"isError":true`)) {
		return fmt.Errorf("tools/call %s: HTTP %d: %s", name, resp.StatusCode, trunc(b))
	}
	return nil
}
