package streamhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// fuzzSource completes every listen at once: its stream, a
// listentest.Stream, has one event queued for each core key of the accepted
// filter (and an update of each of its first two URIs), then its end. Each
// open has a Source of its own, so that nothing is kept across fuzz inputs.
var fuzzSource = listentest.SourceFunc(func(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	accepted, s, err := listentest.NewSource().Open(ctx, req, supported)
	if err != nil {
		return nil, nil, err
	}
	st := s.(*listentest.Stream)
	for _, ev := range fuzzEvents(accepted) {
		st.Send(ev)
	}
	st.End()
	return accepted, st, nil
})

func fuzzEvents(f listen.Filter) []listen.Event {
	var evs []listen.Event
	if f[spec.KeyToolsListChanged] == true {
		evs = append(evs, listen.ToolsListChanged())
	}
	if f[spec.KeyPromptsListChanged] == true {
		evs = append(evs, listen.PromptsListChanged())
	}
	if f[spec.KeyResourcesListChanged] == true {
		evs = append(evs, listen.ResourcesListChanged())
	}
	uris := core.FilterStrings(f, spec.KeyResourceSubscriptions)
	for _, u := range uris[:min(len(uris), 2)] {
		evs = append(evs, listen.ResourceUpdated(u))
	}
	return evs
}

// fuzzStatuses are the statuses the package documentation lists (401 needs
// Authenticate, which the target does not set).
var fuzzStatuses = []int{200, 202, 400, 403, 404, 405, 413, 500, 503}

// fuzzCodes are the JSON-RPC error codes each error status may carry.
var fuzzCodes = map[int][]int{
	400: {jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidParams, jsonrpc.CodeHeaderMismatch, jsonrpc.CodeUnsupportedProtocolVersion},
	403: {jsonrpc.CodeInvalidRequest},
	404: {jsonrpc.CodeMethodNotFound},
	405: {jsonrpc.CodeInvalidRequest},
	413: {jsonrpc.CodeInvalidRequest},
	500: {jsonrpc.CodeInternalError},
	503: {jsonrpc.CodeInternalError},
}

// fuzzRequest builds the request: the body as it is, the headers chosen by
// the bits of variant.
func fuzzRequest(body []byte, variant uint8) *http.Request {
	method := http.MethodPost
	if variant&0x10 != 0 {
		method = http.MethodGet
	}
	r := httptest.NewRequest(method, "/mcp", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	switch variant & 0x3 {
	case 0:
		r.Header.Set(streamhttp.HeaderMethod, spec.MethodListen)
	case 2:
		r.Header.Set(streamhttp.HeaderMethod, "tools/call")
	case 3:
		r.Header.Set(streamhttp.HeaderMethod, "  "+spec.MethodListen+" ")
	}
	switch variant >> 2 & 0x3 {
	case 0:
		r.Header.Set(streamhttp.HeaderProtocolVersion, spec.ProtocolVersion)
	case 2:
		r.Header.Set(streamhttp.HeaderProtocolVersion, "2025-11-25")
	case 3:
		r.Header.Set(streamhttp.HeaderProtocolVersion, "9999-99-99")
	}
	if variant&0x20 != 0 {
		r.Header.Set("Origin", "http://evil.example")
	}
	if variant&0x40 != 0 {
		r.ContentLength = -1 // unknown length: the limit applies while reading
	}
	if variant&0x80 != 0 {
		r.Header.Set("Last-Event-ID", "7")
		r.Header.Set("Mcp-Session-Id", "s")
	}
	return r
}

// FuzzServeHTTPRequest posts arbitrary bodies, with a few header variants,
// to a Handler whose listens complete at once. Whatever the input: no
// panic; a status the package documents; a non-200 answer is a JSON-RPC
// error response (valid JSON, code matching the status, the request's id
// or none) or an empty 202; a 200 answer is an SSE stream whose first
// message is the acknowledgement, then one notification per event of the
// source, all tagged with the request's id, then the completion result.
func FuzzServeHTTPRequest(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	seeds := []string{
		listenBody(`"f"`, `{"toolsListChanged":true}`),
		listenBody(`7`, `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///a","mem://b?c#d"]}`),
		listenBody(`"a\u0000\"b"`, `{}`),
		listenBody(`123456789012345678901234567890`, `{"resourceSubscriptions":[]}`),
		listenBody(`-0`, `{"x-ext":{"deep":[1,2.5,"s",null,true]}}`),
		listenBody(`"u"`, `{"resourceSubscriptions":["relative"]}`),
		listenBody(`"u"`, `{"toolsListChanged":"yes"}`),
		listenBody(`1.5`, `{}`),
		listenBody(`null`, `{}`),
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`[` + listenBody(`1`, `{}`) + `]`,
		`null`, ``, `{`, "\xff\xfe", `{"jsonrpc":"2.0","id":1,}`,
		strings.Repeat("[", 200),
		listenBody(`"big"`, `{"pad":"`+strings.Repeat("x", 5000)+`"}`),
		listenBody(`"`+strings.Repeat("i", 255)+`"`, `{}`), // an id over the bound
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(i*37))
	}
	h := newHandler(f, fuzzSource, config{
		Listen: listen.Options{
			Capabilities: caps(),
			ServerInfo:   listen.Implementation{Name: "fuzz", Version: "1"},
		},
		MaxBodyBytes: 4 << 10,
	})
	f.Fuzz(func(t *testing.T, body []byte, variant uint8) {
		req := fuzzRequest(body, variant)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		out := rec.Body.Bytes()
		if !slices.Contains(fuzzStatuses, res.StatusCode) {
			t.Fatalf("status %d is not documented; body %q", res.StatusCode, out)
		}
		// The id the request carries, when it could be read.
		reqID := ""
		if m, _ := jsonrpc.ParseMessage(body); m.ID.Valid() {
			reqID = m.ID.Raw()
		}
		switch res.StatusCode {
		case http.StatusOK:
			checkFuzzStream(t, req, res, out, reqID)
		case http.StatusAccepted:
			if len(out) != 0 {
				t.Fatalf("202 with a body: %q", out)
			}
		default:
			checkFuzzError(t, res, out, reqID)
		}
	})
}

func checkFuzzError(t *testing.T, res *http.Response, out []byte, reqID string) {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("status %d with Content-Type %q", res.StatusCode, ct)
	}
	if !json.Valid(out) {
		t.Fatalf("status %d: the body is not valid JSON: %q", res.StatusCode, out)
	}
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    *int            `json:"code"`
			Message *string         `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("status %d: not a JSON-RPC error response: %v: %q", res.StatusCode, err, out)
	}
	if e.JSONRPC != "2.0" || e.Error == nil || e.Error.Code == nil || e.Error.Message == nil || e.Result != nil {
		t.Fatalf("status %d: not a JSON-RPC error response: %q", res.StatusCode, out)
	}
	if !slices.Contains(fuzzCodes[res.StatusCode], *e.Error.Code) {
		t.Fatalf("status %d with code %d: %q", res.StatusCode, *e.Error.Code, out)
	}
	if *e.Error.Code == jsonrpc.CodeInternalError && e.Error.Data != nil {
		t.Fatalf("an internal error with data: %q", out)
	}
	if e.ID != nil {
		if id, ok := jsonrpc.ParseID(e.ID); !ok || string(e.ID) != reqID || id.Raw() != reqID {
			t.Fatalf("echoed id %s, the request's is %q: %q", e.ID, reqID, out)
		}
	}
	if res.Header.Get("Content-Length") == "" {
		t.Fatalf("an error response without Content-Length")
	}
}

func checkFuzzStream(t *testing.T, req *http.Request, res *http.Response, out []byte, reqID string) {
	t.Helper()
	if req.Method != http.MethodPost || reqID == "" {
		t.Fatalf("a stream for a %s request with id %q", req.Method, reqID)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("200 with Content-Type %q", ct)
	}
	type wire struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Meta          map[string]json.RawMessage `json:"_meta"`
			Notifications listen.Filter              `json:"notifications"`
		} `json:"params"`
		Result *struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	var msgs []wire
	// Line by line, not with listentest.SSEReader: this checks the exact
	// wire form (LF endings, no comment, one event and one data line).
	rd := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := rd.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" {
			break
		}
		if err != nil || line != "event: message\n" {
			t.Fatalf("want an SSE event line, got %q (%v) in %q", line, err, out)
		}
		data, err := rd.ReadString('\n')
		if err != nil || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("want an SSE data line, got %q (%v)", data, err)
		}
		if blank, err := rd.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("want the end of an SSE event, got %q (%v)", blank, err)
		}
		raw := []byte(strings.TrimSuffix(strings.TrimPrefix(data, "data: "), "\n"))
		var w wire
		if !json.Valid(raw) || json.Unmarshal(raw, &w) != nil || w.JSONRPC != "2.0" {
			t.Fatalf("an SSE event that is not a JSON-RPC message: %q", raw)
		}
		msgs = append(msgs, w)
	}
	if len(msgs) < 2 {
		t.Fatalf("a stream of %d messages: %q", len(msgs), out)
	}
	ack := msgs[0]
	if ack.Method != spec.MethodAcknowledged || ack.ID != nil || string(ack.Params.Meta[spec.MetaSubscriptionID]) != reqID {
		t.Fatalf("the first message is not the acknowledgement of %s: %q", reqID, out)
	}
	notes := msgs[1 : len(msgs)-1]
	if want := len(fuzzEvents(ack.Params.Notifications)); len(notes) != want {
		t.Fatalf("%d notifications for %d events of the accepted filter: %q", len(notes), want, out)
	}
	for _, n := range notes {
		if n.Method == "" || n.ID != nil || string(n.Params.Meta[spec.MetaSubscriptionID]) != reqID {
			t.Fatalf("a notification not tagged with %s: %q", reqID, out)
		}
	}
	last := msgs[len(msgs)-1]
	if last.Result == nil || last.Result.ResultType != "complete" || string(last.ID) != reqID ||
		string(last.Result.Meta[spec.MetaSubscriptionID]) != reqID {
		t.Fatalf("the last message is not the completion of %s: %q", reqID, out)
	}
}
