package gosdk_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// msgLineTooLong is stdio's exact message for a line over MaxLineBytes.
const msgLineTooLong = "Invalid request: message exceeds the maximum line length"

// FuzzServe feeds arbitrary input, then three pings, to Serve with a plain
// go-sdk server, on a connection with 256-byte lines and one request in
// flight (then again with two, so that requests meet at the go-sdk), and
// closes the input once the pings were answered. Nothing panics or
// deadlocks (synctest would report it): every request the multiplexer
// handed the go-sdk was answered and its id freed, whatever its id token or
// encoding (with one unit, a single request left unanswered would hold it
// and stop the pings). Serve returns nil. Every output line is one whole
// JSON-RPC 2.0 message (one writer, no interleaving); every answer to the
// client carries an id token exactly as the client sent it; every
// over-long line is answered by the multiplexer with its line-too-long
// error, so none reached the go-sdk.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		listenLine("1", "2026-07-28") + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` +
			"\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		listenLine("1", "2027-01-01") + "\n" + listenLine("2", "") + "\n" + listenLine("3", "2025-06-18"),
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":"\u0041","method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":"A","method":"ping"}` +
			"\n" + `{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping","ID":3}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}` +
			"\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"not json\n\n  \r\n{\"id\":1}\n[1,2]\n" + `{"jsonrpc":"2.0","id":"s","result":{}}`,
		strings.Repeat("x", 300) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("y", 300) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	const maxLine = 256
	pings := []string{`"fuzz-end-1"`, `"fuzz-end-2"`, `"fuzz-end-3"`}
	f.Fuzz(func(t *testing.T, input []byte) {
		in := bytes.NewBuffer(bytes.Clone(input))
		for _, id := range pings {
			in.WriteString("\n" + `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		}
		in.WriteString("\n")
		sent, overLong := map[string]bool{}, 0
		for l := range strings.Lines(in.String()) {
			l = strings.TrimSuffix(l, "\n")
			if len(l) > maxLine {
				overLong++
				continue
			}
			if m, _ := jsonrpc.ParseMessage([]byte(l)); m.ID.Valid() {
				sent[m.ID.Raw()] = true
			}
		}

		for _, inFlight := range []int{1, 2} {
			wait := !bytes.Contains(input, []byte("fuzz-end"))
			var out strings.Builder
			synctest.Test(t, func(t *testing.T) {
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				served := make(chan error, 1)
				go func() {
					served <- serveStdio(t.Context(), plainServer(), inR, outW, gosdk.StdioOptions{
						Options: gosdk.Options{Logger: slog.New(slog.DiscardHandler)},
						Stdio:   stdio.Options{MaxLineBytes: maxLine, MaxInFlight: inFlight},
					})
					outW.Close()
				}()
				go func() {
					_, _ = inW.Write(in.Bytes())
					if !wait {
						inW.Close()
					}
				}()
				sc := bufio.NewScanner(outR)
				sc.Buffer(nil, 1<<20)
				pending := len(pings)
				for sc.Scan() {
					out.WriteString(sc.Text() + "\n")
					for _, id := range pings {
						if wait && strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":`+id+`,`) {
							if pending--; pending == 0 {
								inW.Close()
							}
						}
					}
				}
				if err := <-served; err != nil {
					t.Fatalf("Serve: %v", err)
				}
				inR.Close()
			})

			answered, tooLong := map[string]bool{}, 0
			for line := range strings.Lines(out.String()) {
				if !strings.HasSuffix(line, "\n") {
					t.Fatalf("a partial line: %q", line)
				}
				var m struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  *string         `json:"method"`
					Error   *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if !json.Valid([]byte(line)) || json.Unmarshal([]byte(line), &m) != nil || m.JSONRPC != "2.0" {
					t.Fatalf("not one JSON-RPC message: %q", line)
				}
				if m.Method != nil {
					continue // the go-sdk's own notification or request
				}
				if m.Error != nil && m.Error.Code == jsonrpc.CodeInvalidRequest && m.Error.Message == msgLineTooLong {
					tooLong++
				}
				if len(m.ID) == 0 || string(m.ID) == "null" {
					continue
				}
				if !sent[string(m.ID)] {
					t.Fatalf("an answer with an id the client did not send: %q", line)
				}
				answered[string(m.ID)] = true
			}
			if tooLong != overLong {
				t.Fatalf("%d lines over the limit, %d answered as such", overLong, tooLong)
			}
		}
	})
}
