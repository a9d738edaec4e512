// Command listenserver is this library with no SDK, for listenbench: a hub,
// listen.NewServer and streamhttp.Front; its one tool, test_trigger_tool_change,
// publishes a tools list change in the call (examples/server gets it through
// the go-sdk's 10 ms debounce). listenbench's TestQuick builds and drives it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/bench/internal/baseline"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8092", "address to listen on (host:port)")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	_ = flag.Bool("quiet", true, "accepted for the benchmark's sake; the server logs only errors anyway")
	profile := flag.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/")
	maxStreams := flag.Int("max-streams", 0, "listen.Options.MaxStreams (0: its default)")
	perClient := flag.Int("max-streams-per-client", 0, "listen.Options.MaxStreamsPerKey (0: its default; -1: no bound)")
	flag.Parse()

	mux, listens, err := newMux(*maxStreams, *perClient)
	if err != nil {
		log.Fatal(err)
	}
	if *profile {
		baseline.Debug(mux)
	}
	baseline.Main(*addr, *lifetime, mux, func() {
		ctx, cancel := context.WithTimeout(context.Background(), baseline.Grace)
		defer cancel()
		_ = listens.Shutdown(ctx) // each stream gets its completion
	})
}

// newMux returns the endpoint at /mcp and its listen handler.
func newMux(maxStreams, perClient int) (*http.ServeMux, *streamhttp.Handler, error) {
	changes, err := hub.New(hub.Options{})
	if err != nil {
		return nil, nil, err
	}
	listens, err := streamhttp.New(listen.NewServer(changes, listen.Options{
		Capabilities:     listen.Capabilities{ToolsListChanged: true},
		ServerInfo:       listen.Implementation{Name: "listenserver", Version: "1.0.0"},
		MaxStreams:       maxStreams,
		MaxStreamsPerKey: perClient,
	}), streamhttp.Options{})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.Front(listens, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		m, ok := streamhttp.FrontMessage(r)
		if !ok || m.Method != "tools/call" || !strings.Contains(string(m.Params), `"name":"test_trigger_tool_change"`) {
			_, _ = w.Write(jsonrpc.ErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found")))
			return
		}
		text := fmt.Sprintf("tools changed: %d listeners", changes.ToolsListChanged().Matched)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, m.ID.Raw(), text)
	})))
	return mux, listens, nil
}
