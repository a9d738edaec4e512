// Command stdio is the example server of examples/server over standard
// input and output: the official go-sdk (v1.8.0) serves server/discover,
// tools, prompts and resources, and this library serves
// subscriptions/listen (many listens on the one connection, each cancelled
// on its own) from a hub, with every change the go-sdk server notifies
// republished to the listens that asked for it (gosdk.NewStdio).
//
//	go run ./examples/stdio
//
// It offers the same tools: test_trigger_tool_change and
// test_trigger_prompt_change change the go-sdk server's tool and prompt
// lists, trigger_resource_update {"uri": ...} calls the handle's
// ResourceUpdated (the listens and the go-sdk's own subscribers). It logs every
// listen opened and closed and every republished change with log/slog on
// standard error (standard output carries the protocol only), and the
// counters of the handle as it stops. It ends at the end of its input, or
// drains on SIGINT or SIGTERM. -broker URL (and -broker-key or
// -broker-key-file) joins the other instances of the server on a NATS or
// Redis broker, as examples/server does.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/examples/internal/broker"
	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/hub"
)

func main() {
	cluster := broker.Flags(flag.CommandLine)
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, _ := hub.New(hub.Options{}) // valid options: no error
	leave, err := cluster.Join(h, logger, nil)
	if err != nil {
		logger.Error("joining the other instances failed", "err", err)
		os.Exit(1)
	}
	defer leave()

	var s *gosdk.Stdio
	server := fixture.New(fixture.Options{
		Name:    "mcplisten-example",
		Version: "0.1.0",
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// One call reaches the listens and the go-sdk's own subscribers.
		ResourceUpdated: func(ctx context.Context, uri string) error { return s.ResourceUpdated(ctx, uri) },
	})
	s, err = gosdk.NewStdio(server, gosdk.StdioOptions{
		Options: gosdk.Options{
			Hub:         h,
			Logger:      logger,
			OnRepublish: command.LogPublish(logger),
			Listen: listen.Options{
				Logger:  logger,
				OnOpen:  command.LogOpen(logger),
				OnClose: command.LogClose(logger),
			},
		},
	})
	if err != nil {
		logger.Error("stdio server not started", "err", err)
		os.Exit(1)
	}
	// Run returns at the end of the input, or once the signal's drain is
	// done (every open listen got its completion result).
	err = s.Run(ctx)
	_ = s.Shutdown(context.Background())
	st, bs := s.Server().Stats(), s.Bridge().Stats()
	logger.Info("stopped", "listens_opened", st.Opened, "listens_refused", st.Refused,
		"list_changes", bs.ListChanges, "resource_updates", bs.ResourceUpdates, "err", err)
	if err != nil && ctx.Err() == nil {
		os.Exit(1)
	}
}
