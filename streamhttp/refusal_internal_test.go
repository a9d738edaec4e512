package streamhttp

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// Each refusal of the listen.Server is answered with its HTTP status, and
// Retry-After (listen.Options.RetryAfter) for capacity, quota and drain.
func TestRefusalStatus(t *testing.T) {
	const retry = 1500 * time.Millisecond
	internal := func(msg string, cause error) error {
		return jsonrpc.NewError(jsonrpc.CodeInternalError, msg).WithCause(cause)
	}
	for _, tt := range []struct {
		name   string
		err    error
		status int
		after  time.Duration
	}{
		{"per-key limit", internal("Too many subscriptions open for this client", listen.ErrOverQuota), http.StatusTooManyRequests, retry},
		{"a Quota's own refusal", fmt.Errorf("tenant: %w", internal("Subscription quota exceeded for this tenant", listen.ErrOverQuota)), http.StatusTooManyRequests, retry},
		{"capacity", internal("Server subscription capacity exhausted", listen.ErrOverloaded), http.StatusServiceUnavailable, retry},
		{"draining", internal("Server is shutting down", listen.ErrShutdown), http.StatusServiceUnavailable, retry},
		{"expired credential", jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Unauthorized").WithCause(listen.ErrExpired), http.StatusUnauthorized, 0},
		{"older protocol version", jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: subscriptions/listen"), http.StatusNotFound, 0},
		{"unsupported version", jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, "Unsupported protocol version"), http.StatusBadRequest, 0},
		{"a failed open", internal("Internal error", nil), http.StatusInternalServerError, 0},
		{"not a JSON-RPC error", errors.New("boom"), http.StatusInternalServerError, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, after := refusalStatus(tt.err, retry)
			assert.Equal(t, tt.status, status, "status")
			assert.Equal(t, tt.after, after, "Retry-After")
		})
	}
}
