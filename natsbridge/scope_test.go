package natsbridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// A tenant-scoped publication crosses NATS with its scope: on every
// instance it reaches the listens of that tenant only, while an unscoped
// one reaches every listen, as without scopes.
func TestScopedPublicationsAcrossNATS(t *testing.T) {
	ns := startNATS(t, 0)
	a := newInstance(t, "A", connect(t, ns.ClientURL()), natsOptions())
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsOptions())

	// B also serves listens whose principal is a tenant (X-Tenant), each
	// scoped to it.
	h, err := streamhttp.New(listen.NewServer(b.hub, listen.Options{Capabilities: caps(),
		Scopes: func(req *listen.Request) []string { return []string{"tenant:" + req.Auth.(string)} }}), streamhttp.Options{
		Authenticate: func(r *http.Request) (any, error) { return r.Header.Get("X-Tenant"), nil },
		KeepAlive:    failsafe,
	})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
		client.CloseIdleConnections()
	})
	acme := listenAt(t, client, ts.URL, "acme", `{"toolsListChanged":true}`, "X-Tenant", "acme")
	globex := listenAt(t, client, ts.URL, "globex", `{"toolsListChanged":true}`, "X-Tenant", "globex")

	// Published on A: acme's change, then a fence for everyone.
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "acme-tools").WithScope("tenant:acme"))
	require.NoError(t, err)
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "fence"))
	require.NoError(t, err)

	ids := func(ns []note) (out []string) {
		for _, n := range ns {
			assert.Equal(t, spec.MethodToolsListChanged, n.method)
			out = append(out, n.id)
		}
		return out
	}
	assert.Equal(t, []string{"acme-tools", "fence"}, ids(acme.until(t, "fence")))
	assert.Equal(t, []string{"fence"}, ids(globex.until(t, "fence")), "globex never saw acme's change")
}
