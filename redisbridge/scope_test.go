package redisbridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
	"github.com/mcplisten/listen/spec"
)

// A tenant-scoped publication crosses a real redis-server with its scope
// (the envelope's "a", in the stream entry): on every instance it reaches
// the listens of that tenant only, whatever its kind, while an unscoped one
// reaches every listen, as without scopes.
func TestScopedPublicationsAcrossRedis(t *testing.T) {
	srv := redistest.Run(t)
	a := join(t, "A", srv.URL(), redisbridge.Options{})
	b := join(t, "B", srv.URL(), redisbridge.Options{})
	filter := listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{watched}}
	acme := b.listen(t, filter, "tenant:acme")
	globex := b.listen(t, filter, "tenant:globex")
	unscoped := b.listen(t, filter)

	// Published on A: acme's changes of both kinds, then a fence for all.
	for _, ev := range []listen.Event{
		tagged(listen.ToolsListChanged(), "acme-tools").WithScope("tenant:acme"),
		tagged(listen.ResourceUpdated(watched), "acme-config").WithScope("tenant:acme"),
		tagged(listen.ToolsListChanged(), "fence"),
	} {
		_, err := a.hub.Publish(ev)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"acme-tools", "acme-config", "fence"}, ids(acme.until(t, "fence")))
	assert.Equal(t, []string{"fence"}, ids(globex.until(t, "fence")), "globex never saw acme's changes")
	assert.Equal(t, []string{"fence"}, ids(unscoped.until(t, "fence")), "an unscoped listen gets unscoped events only")

	// The scope travelled in the entry itself.
	es, err := raw(t, srv.URL()).XRange(context.Background(), "mcp.listen.events", "-", "+").Result()
	require.NoError(t, err)
	scoped := 0
	for _, e := range es {
		d, _ := e.Values["d"].(string)
		if strings.Contains(d, "acme-") {
			assert.Contains(t, d, `"a":"tenant:acme"`)
			scoped++
		}
	}
	assert.Equal(t, 2, scoped)
}
