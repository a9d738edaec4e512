package redisbridge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/cluster/clustertest"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
)

// TestQuotaChurn: three instances on a real redis-server hold a tenant to
// its quota Q = 100 under about 1,000 opens per second of churn spread
// over them: never over Q plus the documented slack, another tenant never
// refused, and with the server gone each instance holds the tenant to its
// local share, ⌊Q/3⌋ (clustertest.CheckQuota).
func TestQuotaChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("a churn of several seconds")
	}
	srv := redistest.Run(t)
	const q = 100
	var quotas []*cluster.Quota
	var ins []*instance
	for _, name := range []string{"A", "B", "C"} {
		qt, err := cluster.NewQuota(clustertest.QuotaOptions(q))
		require.NoError(t, err)
		ins = append(ins, join(t, name, srv.URL(), redisbridge.Options{Options: cluster.Options{Quota: qt}}))
		quotas = append(quotas, qt)
	}
	clustertest.CheckQuota(t, quotas, q, func() {
		srv.Stop()
		for _, in := range ins {
			await(t, in.rec.Conns, "the server lost", func(i cluster.ConnectionInfo) bool { return i.Status != "connected" })
		}
	})
}
