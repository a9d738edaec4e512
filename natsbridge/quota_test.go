package natsbridge_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/quotatest"
	"github.com/mcplisten/listen/natsbridge"
)

// TestQuotaChurn: three instances on a real NATS server hold a tenant to
// its quota Q = 100 under about 1,000 opens per second of churn spread
// over them (each listen held 100 to 300 ms, so that the tenant asks for
// about twice its quota): sampled every 10 ms, and exactly at every
// admission, the tenant's open listens never exceed Q plus the documented
// slack, another tenant is never refused, and with the server gone each
// instance holds the tenant to its local share, ⌊Q/3⌋ (quotatest.Check).
func TestQuotaChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("a churn of several seconds")
	}
	ns := startNATS(t, 0)
	const q = 100
	var quotas []*cluster.Quota
	var recs []*recorder
	for range 3 {
		qt, err := cluster.NewQuota(quotatest.Options(q))
		require.NoError(t, err)
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		rec := newRecorder()
		br, err := natsbridge.Connect(ns.ClientURL(), h,
			natsbridge.Options{Options: cluster.Options{Quota: qt, Hooks: rec}},
			nats.ReconnectWait(50*time.Millisecond), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = br.Close() })
		quotas = append(quotas, qt)
		recs = append(recs, rec)
	}
	quotatest.Check(t, quotas, q, func() {
		stopNATS(ns)
		for _, rec := range recs {
			await(t, rec.Conns, "the server lost", func(i cluster.ConnectionInfo) bool { return i.Status != cluster.Connected })
		}
	})
}
