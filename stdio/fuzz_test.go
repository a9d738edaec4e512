package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// fuzzSource returns a listentest.Source that fails the open of the listen
// "fail-open", and a driver for its streams, which the caller runs until
// stop is closed: a stream whose supported filter holds promptsListChanged
// stays idle until it is closed (so EOF or a cancellation ends it); any
// other stream gets two tools/list_changed events (or, with
// resourceSubscriptions, an update of the first URI) and ends.
func fuzzSource() (*listentest.Source, func(stop <-chan struct{})) {
	src := listentest.NewSource()
	src.BeforeOpen = func(_ context.Context, req *listen.Request) error {
		if req.ID.Raw() == `"fail-open"` {
			return errors.New("no")
		}
		return nil
	}
	drive := func(stop <-chan struct{}) {
		for {
			select {
			case st := <-src.Opened():
				if st.Supported[spec.KeyPromptsListChanged] == true {
					continue
				}
				for n := 1; n <= 2; n++ {
					if uris := core.FilterStrings(st.Supported, spec.KeyResourceSubscriptions); len(uris) > 0 {
						st.Send(listen.ResourceUpdated(uris[0]))
					} else {
						st.Send(listen.ToolsListChanged().WithMetadata(map[string]any{"n": n}))
					}
				}
				st.End()
			case <-stop:
				return
			}
		}
	}
	return src, drive
}

// fuzzHandler echoes the params as the result (pretty-printed, so the
// transport must compact them), fails with them as error data, or panics.
var fuzzHandler = stdio.HandlerFunc(func(_ context.Context, m jsonrpc.Message) (json.RawMessage, error) {
	switch m.Method {
	case "panic":
		panic("fuzz")
	case "err":
		var data any
		_ = json.Unmarshal(m.Params, &data)
		return nil, jsonrpc.NewError(-32000, "err").WithData(data)
	}
	if len(m.Params) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if json.Indent(&buf, m.Params, "", "\n  ") != nil {
		return m.Params, nil
	}
	return buf.Bytes(), nil
})

func FuzzServeInput(f *testing.F) {
	seeds := []string{
		"",
		"\n\n  \r\n",
		listenLine(`1`, `{"toolsListChanged":true}`),
		listenLine(`"idle"`, `{"promptsListChanged":true}`) + "\n" + cancelLine(`"idle"`, "bye") + "\n" + requestLine(`"idle"`, "tools/list"),
		listenLine(`"r"`, `{"resourceSubscriptions":["file:///a","b"]}`),
		listenLine(`"r"`, `{"resourceSubscriptions":["file:///a"]}`),
		listenLine(`2`, `{"promptsListChanged":true}`) + "\n" + listenLine(`2`, `{}`) + "\n" + requestLine(`2`, "x"),
		listenLine(`"fail-open"`, `{}`),
		listenLineVersion(`3`, `{}`, "2025-06-18"),
		listenLineVersion(`3`, `{}`, "v9"),
		`{"jsonrpc":"2.0","id":5,"method":"echo","params":{"a":[1,2,{"b":"c\nd"}]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"err","params":{"x":true}}`,
		`{"jsonrpc":"2.0","id":7,"method":"panic"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
		`[{"jsonrpc":"2.0"}]`,
		`{"jsonrpc":"2.0","id":null}`,
		"\xff\xfe{",
		strings.Repeat("x", 600) + "\n" + requestLine(`8`, "after"),
		strings.Repeat(listenLine(`"p"`, `{"promptsListChanged":true}`)+"\n", 5),
		`{"jsonrpc":"2.0","id":"s","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`,
		requestLine(`-0`, "a") + "\n" + requestLine(`"\u0041"`, "b") + "\n" + requestLine(`"A"`, "c") + "\n" + cancelLine(`"A"`, "x") + "\n" + cancelLine(`1`, "x"),
		`{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","method":"tools/list","Method":"x"}`,
		requestLine(`9`, "a") + "\n" + cancelLine(`9`, "x") + "\n" + requestLine(`9`, "b") + "\n" + requestLine(`10`, "c") + "\n" + requestLine(`11`, "d"),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ignore := goleak.IgnoreCurrent()
		opts := options{Listen: listen.Options{Capabilities: testCaps, MaxStreams: 3}, Options: stdio.Options{Handler: fuzzHandler, MaxLineBytes: 512, MaxInFlight: 2}}
		// driven starts a fuzzSource's driver and returns the source and a
		// function that stops the driver and waits for it.
		driven := func() (*listentest.Source, func()) {
			src, drive := fuzzSource()
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				drive(stop)
			}()
			return src, func() { close(stop); <-stopped }
		}
		var out bytes.Buffer
		src, stopDriver := driven()
		srv := newServer(t, src, opts)
		err := srv.Serve(context.Background(), bytes.NewReader(data), &out)
		stopDriver()
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		checkOutput(t, out.Bytes())

		// The same input on a Conn whose peer answers every request.
		out.Reset()
		src, stopDriver = driven()
		c := newServer(t, src, opts).NewConn(bytes.NewReader(data), &out)
		peerDone := make(chan struct{})
		go func() {
			defer close(peerDone)
			defer c.Close()
			for {
				m, err := c.ReadMessage(context.Background())
				if err != nil {
					return
				}
				var head struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(m, &head) != nil || !json.Valid(m) {
					t.Errorf("the peer got a message that is not JSON: %q", m)
					return
				}
				if head.Method == spec.MethodListen || head.Method == spec.MethodCancelled && !bytes.Contains(m, []byte(`"requestId":`)) {
					t.Errorf("the peer got a listen or a cancellation it cannot know: %q", m)
				}
				if head.Method != "" && len(head.ID) > 0 {
					if n, err := strconv.ParseUint(string(head.ID), 10, 64); err != nil || n == 0 {
						t.Errorf("the peer got a request under an id not the connection's: %q", m)
					}
					answer := `{"jsonrpc":"2.0","id":` + string(head.ID) + `,"result":{}}`
					if err := c.WriteMessage(context.Background(), json.RawMessage(answer)); err != nil {
						t.Errorf("WriteMessage: %v", err)
						return
					}
				}
			}
		}()
		err = c.Serve(context.Background())
		stopDriver()
		if err != nil {
			t.Fatalf("Conn.Serve: %v", err)
		}
		<-peerDone
		checkOutput(t, out.Bytes())
		// Every answer carries an id token the client sent.
		sent := map[string]bool{}
		for line := range bytes.Lines(data) {
			if m, _ := jsonrpc.ParseMessage(bytes.TrimSpace(line)); m.ID.Valid() {
				sent[m.ID.Raw()] = true
			}
		}
		for line := range bytes.Lines(out.Bytes()) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method *string         `json:"method"`
			}
			_ = json.Unmarshal(line, &m)
			if m.Method == nil && len(m.ID) > 0 && string(m.ID) != "null" && !sent[string(m.ID)] {
				t.Fatalf("an answer with an id the client did not send: %q", line)
			}
		}
		goleak.VerifyNone(t, ignore)
	})
}

// checkOutput asserts that every output line is one JSON-RPC 2.0 object, and
// that each notification tagged with a subscription id comes after an
// acknowledgement for that id.
func checkOutput(t *testing.T, out []byte) {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatalf("output does not end with a newline: %q", out)
	}
	acked := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(out) == 0 {
			break
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if !json.Valid(line) || json.Unmarshal(line, &m) != nil {
			t.Fatalf("output line is not a JSON object: %q", line)
		}
		if m.JSONRPC != "2.0" {
			t.Fatalf("output line is not JSON-RPC 2.0: %q", line)
		}
		if m.Method == "" {
			continue
		}
		if len(m.ID) > 0 {
			t.Fatalf("a notification with an id: %q", line)
		}
		sub := string(m.Params.Meta[spec.MetaSubscriptionID])
		switch {
		case m.Method == spec.MethodAcknowledged:
			acked[sub] = true
		case !acked[sub]:
			t.Fatalf("a notification before its acknowledgement: %q", line)
		}
	}
}
