package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The server, built and started as the benchmark starts it, answers
// mcp-go's own client with mcp-go's own listen: acknowledged, and
// tools/list_changed after the trigger tool.
func TestServesMCPGoListen(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpgoserver")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-quiet", "-lifetime", "1m")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("first line %q: %v", line, err)
	}
	c, err := client.NewStreamableHttpClient(strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	notes := make(chan string, 8)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n.Method })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	next := func() string {
		select {
		case m := <-notes:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return ""
		}
	}
	if m := next(); m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first notification %q", m)
	}
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "test_trigger_tool_change"}}); err != nil {
		t.Fatal(err)
	}
	if m := next(); m != "notifications/tools/list_changed" {
		t.Fatalf("notification %q", m)
	}
}
