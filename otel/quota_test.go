package otel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	listenotel "github.com/mcplisten/listen/otel"
)

// The quota instruments hold the TopTenants tenants by name and the rest
// as "other", and stop with the registration.
func TestQuotaInstruments(t *testing.T) {
	m, reader := newMetrics(t)
	q, err := cluster.NewQuota(cluster.QuotaOptions{
		Tenant: func(r *listen.Request) (string, int) {
			s := r.Auth.(string)
			return s, strings.Count(s, "") // a quota of len(s)+1
		},
		TopTenants: 1,
	})
	require.NoError(t, err)
	reg, err := m.Quota(q)
	require.NoError(t, err)
	for _, tenant := range []string{"a", "bb", "bb", "c", "c", "c", "c"} {
		_, _ = q.Acquire(context.Background(), &listen.Request{Auth: tenant})
	}
	got := series(t, reader)
	assert.Equal(t, map[string]int64{
		"mcp.listen.quota.open{mcp.listen.tenant=bb}":          2,
		"mcp.listen.quota.open{mcp.listen.tenant=other}":       3,
		"mcp.listen.quota.deployment{mcp.listen.tenant=bb}":    2,
		"mcp.listen.quota.deployment{mcp.listen.tenant=other}": 3,
		"mcp.listen.quota.refused{mcp.listen.tenant=other}":    2,
		"mcp.listen.quota.fallback{}":                          1,
		"mcp.listen.quota.instances{}":                         1,
	}, got)
	require.NoError(t, reg.Unregister())
	assert.Empty(t, series(t, reader))

	var disabled *listenotel.Metrics
	reg, err = disabled.Quota(q)
	require.NoError(t, err)
	require.NoError(t, reg.Unregister())
}
