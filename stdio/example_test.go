package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// oneShot is a Source whose every stream yields one tools/list_changed event
// and ends.
type oneShot struct{}

func (oneShot) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &oneShotStream{}, nil
}

type oneShotStream struct{ sent bool }

func (s *oneShotStream) Next() (listen.Event, error) {
	if s.sent {
		return listen.Event{}, listen.ErrClosed
	}
	s.sent = true
	return listen.ToolsListChanged(), nil
}

func (s *oneShotStream) Close(error) {}

// A listen over a pipe: the acknowledgement, the event, the completion.
func ExampleServer_Serve() {
	ls := listen.NewServer(oneShot{}, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
	srv, err := stdio.New(ls, stdio.Options{})
	if err != nil {
		log.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(context.Background(), inR, outW)
		outW.Close()
	}()

	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}`+"\n")
	out := bufio.NewScanner(outR)
	for range 3 {
		out.Scan()
		fmt.Println(out.Text())
	}
	inW.Close() // EOF: Serve returns once everything has ended
	fmt.Println("Serve:", <-done)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}
	// {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
	// Serve: <nil>
}

// A server process: subscriptions/listen on standard input and output, every
// other method to the application's handler, and a drain on SIGINT/SIGTERM.
// (This is the snippet of the README; it is compiled, not run.)
func Example() {
	var src listen.Source = oneShot{} // your change feed
	app := stdio.HandlerFunc(func(ctx context.Context, msg jsonrpc.Message) (json.RawMessage, error) {
		switch msg.Method {
		case "tools/list":
			return json.RawMessage(`{"tools":[]}`), nil
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+msg.Method)
	})
	// The listen policy: what the server offers, its limits, the drain.
	ls := listen.NewServer(src, listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
		ServerInfo:   listen.Implementation{Name: "example", Version: "1.0.0"},
		MaxStreams:   1024,             // the default
		DrainWindow:  10 * time.Second, // spread the completions at shutdown
	})
	// The transport: framing and the connection.
	srv, err := stdio.New(ls, stdio.Options{
		Handler: app,
		// The defaults, spelled out:
		MaxInFlight:  64,
		MaxLineBytes: 4 << 20,
		WriteTimeout: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), os.Stdin, os.Stdout) }()
	select {
	case err := <-served: // the client closed stdin
		if err != nil {
			log.Fatal(err)
		}
	case <-ctx.Done():
		drain, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		// Completes every open listen, spread over the DrainWindow (cut to
		// 90% of what drain leaves), and returns once Serve returned. A
		// stdin pipe is read through a non-blocking duplicate, so its
		// pending Read is stopped; the process then exits.
		if err := srv.Shutdown(drain); err != nil {
			log.Print(err)
		}
	}
}

// A peer shares the connection: it answers tools/list, and writes a log
// message nobody asked for; the listen is served by the Server.
func ExampleServer_NewConn() {
	ls := listen.NewServer(oneShot{}, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
	srv, err := stdio.New(ls, stdio.Options{})
	if err != nil {
		log.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := srv.NewConn(inR, outW)
	done := make(chan error, 1)
	go func() {
		done <- c.Serve(context.Background())
		outW.Close()
	}()

	// The peer, such as an MCP server implementation's connection.
	go func() {
		defer c.Close()
		ctx := context.Background()
		for {
			msg, err := c.ReadMessage(ctx) // io.EOF once the client is gone
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(msg, &req)
			_ = c.WriteMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing tools"}}`))
			_ = c.WriteMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"tools":[]}}`))
		}
	}()

	out := bufio.NewScanner(outR)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	for range 2 {
		out.Scan()
		fmt.Println(out.Text())
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`+"\n")
	for range 3 {
		out.Scan()
		fmt.Println(out.Text())
	}
	inW.Close() // EOF: the peer reads io.EOF and closes; Serve returns
	fmt.Println("Serve:", <-done)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing tools"}}
	// {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"notifications":{"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}
	// {"jsonrpc":"2.0","id":2,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"resultType":"complete"}}
	// Serve: <nil>
}
