package mcpgo

import "github.com/mark3labs/mcp-go/server"

// NewHandlerSurrogateEveryID is NewHandler, but the Handler sends every
// request with an id to mcp-go under a surrogate, as it does when the
// start-up probe finds that mcp-go does not answer plain ids as sent.
func NewHandlerSurrogateEveryID(s *server.MCPServer, opts HandlerOptions) (*Handler, error) {
	return newHandler(s, opts, true)
}
