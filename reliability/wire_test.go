package reliability_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// failsafe bounds every wait: it never synchronises anything, it only turns
// a hang into a failure.
const failsafe = 30 * time.Second

// recv receives from ch, or fails the test after failsafe.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// await waits until ch is closed, or fails the test after failsafe.
func await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	recv(t, ch, what)
}

// gate blocks its waiters until it is released (idempotent). A nil gate
// never blocks.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) release() {
	if g != nil {
		g.once.Do(func() { close(g.ch) })
	}
}

func (g *gate) wait() {
	if g != nil {
		<-g.ch
	}
}

// keyed hands values from producers to consumers by key: each key has its
// own buffered channel, made by whichever side comes first.
type keyed[T any] struct {
	size int // channel capacity; 0 means 64
	mu   sync.Mutex
	m    map[string]chan T
}

func (k *keyed[T]) ch(key string) chan T {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = make(map[string]chan T)
	}
	c := k.m[key]
	if c == nil {
		size := k.size
		if size == 0 {
			size = 64
		}
		c = make(chan T, size)
		k.m[key] = c
	}
	return c
}

// drop forgets key's channel.
func (k *keyed[T]) drop(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}

// putExisting hands v over only if someone asked for key and has room for
// it; it reports whether it did.
func (k *keyed[T]) putExisting(key string, v T) bool {
	k.mu.Lock()
	c := k.m[key]
	k.mu.Unlock()
	if c == nil {
		return false
	}
	select {
	case c <- v:
		return true
	default:
		return false
	}
}

// put never blocks the producer: a full channel is a test bug, reported by
// panicking on the producer's goroutine (it would otherwise hang).
func (k *keyed[T]) put(key string, v T) {
	select {
	case k.ch(key) <- v:
	default:
		panic("keyed channel full for " + key)
	}
}

// --- JSON-RPC messages ---

// msg is one JSON-RPC message seen by a client or recorded from a server.
type msg struct {
	raw    string
	fields map[string]json.RawMessage
}

func parseMsg(b []byte) (msg, error) {
	m := msg{raw: string(b)}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m.fields); err != nil {
		return m, fmt.Errorf("not a JSON object: %q: %w", b, err)
	}
	if dec.More() {
		return m, fmt.Errorf("trailing data after the message: %q", b)
	}
	var v string
	if json.Unmarshal(m.fields["jsonrpc"], &v) != nil || v != "2.0" {
		return m, fmt.Errorf("not JSON-RPC 2.0: %q", b)
	}
	return m, nil
}

func (m msg) String() string { return m.raw }

// id returns the "id" token, "" when absent.
func (m msg) id() string { return string(m.fields["id"]) }

func (m msg) method() string {
	var s string
	_ = json.Unmarshal(m.fields["method"], &s)
	return s
}

// object decodes the member key as an object of raw members.
func (m msg) object(key string) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	_ = json.Unmarshal(m.fields[key], &o)
	return o
}

// subID returns the subscription id token of a notification (params._meta)
// or of a result (result._meta), "" when absent.
func (m msg) subID() string {
	for _, in := range []string{"params", "result"} {
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(m.object(in)["_meta"], &meta)
		if tok, ok := meta[spec.MetaSubscriptionID]; ok {
			return string(tok)
		}
	}
	return ""
}

// key is what a message belongs to: its id, or its subscription id.
func (m msg) key() string {
	if id := m.id(); id != "" {
		return id
	}
	return m.subID()
}

// terminal reports whether m ends a request: a result or an error with an id.
func (m msg) terminal() bool {
	_, res := m.fields["result"]
	_, er := m.fields["error"]
	return m.id() != "" && m.method() == "" && (res || er)
}

// completion reports whether m is a completion result (resultType complete).
func (m msg) completion() bool {
	var rt string
	_ = json.Unmarshal(m.object("result")["resultType"], &rt)
	return m.id() != "" && rt == "complete"
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// wireErr returns the error object, or nil.
func (m msg) wireErr() *wireError {
	raw, ok := m.fields["error"]
	if !ok {
		return nil
	}
	var e wireError
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	return &e
}

// accepted returns the acknowledgement's notifications object.
func (m msg) accepted() map[string]any {
	var p struct {
		Notifications map[string]any `json:"notifications"`
	}
	_ = json.Unmarshal(m.fields["params"], &p)
	return p.Notifications
}

// seq returns params._meta.seq of a notification, -1 when absent.
func (m msg) seq() int {
	var p struct {
		Meta struct {
			Seq *int `json:"seq"`
		} `json:"_meta"`
	}
	if json.Unmarshal(m.fields["params"], &p) != nil || p.Meta.Seq == nil {
		return -1
	}
	return *p.Meta.Seq
}

// uri returns params.uri of a resource update.
func (m msg) uri() string {
	var u string
	_ = json.Unmarshal(m.object("params")["uri"], &u)
	return u
}

func requireAck(t testing.TB, m msg, id string) {
	t.Helper()
	if m.method() != spec.MethodAcknowledged || m.subID() != id || m.id() != "" {
		t.Fatalf("want the acknowledgement of %s, got %s", id, m)
	}
}

func requireCompletion(t testing.TB, m msg, id string) {
	t.Helper()
	if !m.completion() || m.id() != id || m.subID() != id {
		t.Fatalf("want the completion of %s, got %s", id, m)
	}
}

func requireError(t testing.TB, m msg, id string, code int, message string) {
	t.Helper()
	e := m.wireErr()
	if e == nil || m.id() != id || e.Code != code || e.Message != message {
		t.Fatalf("want error %d %q for id %q, got %s", code, message, id, m)
	}
	if code == jsonrpc.CodeInternalError && len(e.Data) > 0 {
		t.Fatalf("an internal error carries data: %s", m)
	}
}

func requireFailure(t testing.TB, m msg, id string) {
	t.Helper()
	requireError(t, m, id, jsonrpc.CodeInternalError, core.SourceFailed)
}

func requireNotification(t testing.TB, m msg, id, method string) {
	t.Helper()
	if m.method() != method || m.subID() != id || m.id() != "" {
		t.Fatalf("want %s for %s, got %s", method, id, m)
	}
}

// --- requests ---

// listenBody returns a 2026-07-28 listen request with the id token id and
// the notifications object filter.
func listenBody(id, filter string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` +
		`"notifications":` + filter + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"reliability","version":"1.0.0"}}}}`
}

func cancelLine(id, reason string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":%q}}`, id, reason)
}

func pingLine(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{}}`
}

// --- SSE ---

// sseMessages parses a whole recorded SSE body, ignoring a trailing
// incomplete event (a write cut short).
func sseMessages(body []byte) ([]msg, error) {
	r := listentest.NewSSEReader(bytes.NewReader(body))
	var out []msg
	for {
		data, err := r.Data()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		m, err := parseMsg(data)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}
