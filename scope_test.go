package listen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
)

// TestScopedEventReachesItsScopeOnly pins the one scope rule: a scoped
// event reaches the listens that belong to its scope and no other; a
// listen with no scope, which is every listen when Options.Scopes is nil
// (the default), receives unscoped events only. Both the hub (which picks
// the listeners) and the subscription (which drops what a source hands it)
// keep the rule.
func TestScopedEventReachesItsScopeOnly(t *testing.T) {
	acme := func(*listen.Request) []string { return []string{"tenant:acme"} }
	for _, tc := range []struct {
		name   string
		opts   listen.Options
		scoped bool // whether the listen receives an event scoped to tenant:acme
	}{
		{"Scopes nil", listen.Options{}, false},
		{"Scopes nil, with Access and a lifetime", listen.Options{Access: &listen.Access{}, MaxLifetime: time.Hour}, false},
		{"Scopes naming none", listen.Options{Scopes: func(*listen.Request) []string { return nil }}, false},
		{"Scopes naming another", listen.Options{Scopes: func(*listen.Request) []string { return []string{"tenant:globex"} }}, false},
		{"Scopes naming it", listen.Options{Scopes: acme}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hub.New(hub.Options{})
			require.NoError(t, err)
			opts := tc.opts
			opts.Capabilities = allCaps
			req := request(jsonrpc.StringID("l"), listen.Filter{"toolsListChanged": true})
			req.Auth = "bob"
			sub, err := listen.Open(t.Context(), h, req, &opts)
			require.NoError(t, err)
			defer sub.Close(nil)

			want := 0
			if tc.scoped {
				want = 1
			}
			r, err := h.Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
			require.NoError(t, err)
			assert.Equal(t, want, r.Matched, "the hub")
			msg, err := sub.Notification(listen.ToolsListChanged().WithScope("tenant:acme"))
			require.NoError(t, err)
			assert.Equal(t, tc.scoped, msg != nil, "the subscription")

			r, err = h.Publish(listen.ToolsListChanged())
			require.NoError(t, err)
			assert.Equal(t, 1, r.Matched, "an unscoped event reaches every listen")
			msg, err = sub.Notification(listen.ToolsListChanged())
			require.NoError(t, err)
			assert.NotNil(t, msg)
		})
	}
}
