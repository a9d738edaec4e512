package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/examples/fixture"
)

// TestClientListen checks the plain go-sdk server with the go-sdk client.
func TestClientListen(t *testing.T) {
	server := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()
	fixture.CheckClientListen(t, ts.URL)
}
