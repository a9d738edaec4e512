package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/upstream"
)

// This file is the client process: it holds the downstream listens (a
// process of its own, so that neither process needs more than one file
// descriptor per stream), checks every notification against the filter of
// the listen it came on, and answers the parent's commands, one line each:
//
//	reset                 forget what arrived
//	wait TOKEN N MS       wait until N listens got TOKEN (at most MS): {"count","first","last"}
//	quiet MS              wait until nothing arrived for MS: {"tokens","violations","dups"}
//	expect MS JSON        wait (at most MS) until every token of JSON ({token: listens}) reached
//	                      its count, then quiet 300: the same answer as quiet
//	burst K MS            open K more listens, evenly over MS, each on a fresh URI: {"ok"}
//	close J               close burst listen J: {"ok"}
//
// A TOKEN is a notification's method, followed by " URI" for an update.

// tally is what arrived for one token since the last reset.
type tally struct {
	Count int   `json:"count"` // listens that got it
	Total int   `json:"total"` // times it came, all listens
	First int64 `json:"first"` // unix ns
	Last  int64 `json:"last"`
}

type clientState struct {
	mu         sync.Mutex
	tokens     map[string]*tally
	per        []map[string]int // per listen: token -> times since reset
	violations int              // over the whole run
	lastAt     time.Time
	changed    chan struct{} // closed and replaced at every arrival
}

func newClientState() *clientState {
	return &clientState{tokens: map[string]*tally{}, changed: make(chan struct{})}
}

// register adds a listen and returns its index.
func (c *clientState) register() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.per = append(c.per, map[string]int{})
	return len(c.per) - 1
}

func (c *clientState) arrived(i int, f listen.Filter, uris map[string]bool, n upstream.Notification) {
	now := time.Now()
	tok := n.Method
	ok := false
	switch n.Kind() {
	case listen.KindToolsListChanged:
		ok = f[spec.KeyToolsListChanged] == true
	case listen.KindPromptsListChanged:
		ok = f[spec.KeyPromptsListChanged] == true
	case listen.KindResourcesListChanged:
		ok = f[spec.KeyResourcesListChanged] == true
	case listen.KindResourceUpdated:
		ok = uris[n.URI]
		tok += " " + n.URI
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		c.violations++
	}
	t := c.tokens[tok]
	if t == nil {
		t = &tally{First: now.UnixNano()}
		c.tokens[tok] = t
	}
	t.Total++
	t.Last = now.UnixNano()
	if c.per[i][tok]++; c.per[i][tok] == 1 {
		t.Count++
	}
	c.lastAt = now
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *clientState) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.tokens)
	for _, m := range c.per {
		clear(m)
	}
}

// openListen opens one listen and reads it on a goroutine of its own,
// which ends when the listen ends (closed, or the gateway gone). It reads
// the stream with a few byte searches, not a JSON decoder per message:
// with 10,000 listens on two shared cores the client's own decoding would
// otherwise weigh in every figure.
func (c *clientState) openListen(ctx context.Context, url string, f listen.Filter, wg *sync.WaitGroup) (*lightStream, error) {
	st, rd, err := openLight(ctx, url, f)
	if err != nil {
		return nil, err
	}
	i := c.register()
	uris := map[string]bool{}
	for _, u := range f.Strings(spec.KeyResourceSubscriptions) {
		uris[u] = true
	}
	wg.Add(1)
	go func() { // ends with the listen
		defer wg.Done()
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				return
			}
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				continue
			}
			n := upstream.Notification{Method: field(data, `"method":"`)}
			if n.Method == "" { // the completion
				return
			}
			if n.Kind() == listen.KindResourceUpdated {
				n.URI = field(data, `"uri":"`)
			}
			c.arrived(i, f, uris, n)
		}
	}()
	return st, nil
}

// field is the string after key in data, up to the next quote (the
// gateway's URIs and methods need no escapes).
func field(data []byte, key string) string {
	_, rest, ok := bytes.Cut(data, []byte(key))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(v)
}

// lightStream is one downstream listen of the client process.
type lightStream struct {
	body   io.ReadCloser
	cancel context.CancelFunc
}

// Close ends the listen (the gateway sees the stream close).
func (l *lightStream) Close() {
	l.cancel()
	l.body.Close()
}

var lightClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// openLight sends the listen and reads up to its acknowledgement.
func openLight(ctx context.Context, url string, f listen.Filter) (*lightStream, *bufio.Reader, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": spec.MethodListen, "params": map[string]any{
		"_meta":         map[string]any{spec.MetaProtocolVersion: spec.ProtocolVersion, spec.MetaClientCapabilities: map[string]any{}},
		"notifications": f,
	}})
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	resp, err := lightClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	st := &lightStream{body: resp.Body, cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		st.Close()
		return nil, nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	rd := bufio.NewReaderSize(resp.Body, 4096)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			if field(data, `"method":"`) != spec.MethodAcknowledged {
				st.Close()
				return nil, nil, fmt.Errorf("not acknowledged: %s", data)
			}
			return st, rd, nil
		}
	}
}

// runChild is the client process: n listens of filterOf(i) on url, then
// commands from in until it ends.
func runChild(url string, n, conc int, in io.Reader, out io.Writer) error {
	ctx := context.Background()
	c := newClientState()
	var wg sync.WaitGroup
	var streams []*lightStream
	defer func() {
		for _, s := range streams {
			s.Close()
		}
		wg.Wait()
	}()
	start := time.Now()
	opened := make([]*lightStream, n)
	errs := make(chan error, conc)
	sem := make(chan struct{}, conc)
	var owg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		owg.Add(1)
		go func() { // ends when this listen is open
			defer owg.Done()
			defer func() { <-sem }()
			st, err := c.openListen(ctx, url, filterOf(i), &wg)
			if err != nil {
				select {
				case errs <- fmt.Errorf("listen %d: %w", i, err):
				default:
				}
				return
			}
			opened[i] = st
		}()
	}
	owg.Wait()
	for _, s := range opened {
		if s != nil {
			streams = append(streams, s)
		}
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	enc := json.NewEncoder(out)
	_ = enc.Encode(map[string]any{"ready": true, "ms": time.Since(start).Milliseconds()})

	var burst []*lightStream
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "reset":
			c.reset()
			_ = enc.Encode(map[string]any{"ok": true})
		case "wait":
			want, _ := strconv.Atoi(f[len(f)-2])
			ms, _ := strconv.Atoi(f[len(f)-1])
			tok := strings.Join(f[1:len(f)-2], " ")
			deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
			for {
				c.mu.Lock()
				t := c.tokens[tok]
				ch := c.changed
				c.mu.Unlock()
				if t != nil && t.Count >= want {
					_ = enc.Encode(*t)
					break
				}
				left := time.Until(deadline)
				if left <= 0 {
					got := tally{}
					if t != nil {
						got = *t
					}
					_ = enc.Encode(got)
					break
				}
				select {
				case <-ch:
				case <-time.After(left):
				}
			}
		case "expect":
			ms, _ := strconv.Atoi(f[1])
			var want map[string]int
			_ = json.Unmarshal([]byte(strings.Join(f[2:], " ")), &want)
			deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
			for {
				c.mu.Lock()
				done := true
				for tok, n := range want {
					if t := c.tokens[tok]; t == nil || t.Count < n {
						done = false
						break
					}
				}
				ch := c.changed
				c.mu.Unlock()
				left := time.Until(deadline)
				if done || left <= 0 {
					break
				}
				select {
				case <-ch:
				case <-time.After(left):
				}
			}
			c.quiet(enc, 300*time.Millisecond)
		case "quiet":
			ms, _ := strconv.Atoi(f[1])
			c.quiet(enc, time.Duration(ms)*time.Millisecond)
		case "burst":
			k, _ := strconv.Atoi(f[1])
			ms, _ := strconv.Atoi(f[2])
			step := time.Duration(ms) * time.Millisecond / time.Duration(k)
			begin := time.Now()
			var bwg sync.WaitGroup
			res := make([]*lightStream, k)
			var failed error
			var fmu sync.Mutex
			for j := range k {
				if d := time.Until(begin.Add(time.Duration(j) * step)); d > 0 {
					time.Sleep(d)
				}
				bwg.Add(1)
				go func() { // ends when this listen is open
					defer bwg.Done()
					st, err := c.openListen(ctx, url, burstFilter(len(burst)+j), &wg)
					if err != nil {
						fmu.Lock()
						failed = err
						fmu.Unlock()
						return
					}
					res[j] = st
				}()
			}
			bwg.Wait()
			burst = append(burst, res...)
			for _, s := range res {
				if s != nil {
					streams = append(streams, s)
				}
			}
			_ = enc.Encode(map[string]any{"ok": failed == nil, "ms": time.Since(begin).Milliseconds()})
		case "close":
			j, _ := strconv.Atoi(f[1])
			if j < len(burst) && burst[j] != nil {
				burst[j].Close()
			}
			_ = enc.Encode(map[string]any{"ok": true})
		default:
			_ = enc.Encode(map[string]any{"error": "unknown command " + f[0]})
		}
	}
	return sc.Err()
}

// quiet waits until nothing arrived for d, then writes what arrived since
// the last reset, the violations of the run and the duplicates.
func (c *clientState) quiet(enc *json.Encoder, d time.Duration) {
	for {
		c.mu.Lock()
		since := time.Since(c.lastAt)
		c.mu.Unlock()
		if since >= d {
			break
		}
		time.Sleep(d - since)
	}
	c.mu.Lock()
	tokens := map[string]tally{}
	for k, v := range c.tokens {
		tokens[k] = *v
	}
	dups := 0
	for _, m := range c.per {
		for _, v := range m {
			dups += v - 1
		}
	}
	v := c.violations
	c.mu.Unlock()
	_ = enc.Encode(map[string]any{"tokens": tokens, "violations": v, "dups": dups})
}
