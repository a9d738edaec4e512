package clustertest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/cluster/clustertest"
)

// TestRun: on one quota without a bridge (no slack), the churn never
// holds more than the quota, asks for more than it, and the calm tenant
// is never refused.
func TestChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := cluster.NewQuota(clustertest.QuotaOptions(20))
		require.NoError(t, err)
		r := clustertest.Churn(context.Background(), clustertest.ChurnConfig{
			Quotas: []*cluster.Quota{q}, Rate: 1000, Duration: time.Second,
			MinLife: 50 * time.Millisecond, MaxLife: 150 * time.Millisecond,
			Sample: 10 * time.Millisecond, Calm: 5,
		})
		assert.Equal(t, 20, r.MaxExact)
		assert.LessOrEqual(t, r.MaxSampled, 20)
		assert.GreaterOrEqual(t, r.Samples, 100)
		assert.Positive(t, r.Refused)
		assert.Equal(t, 1000, r.Admitted+r.Refused)
		assert.Zero(t, r.CalmRefused)
		assert.Equal(t, []int{20}, r.MaxLocal)
		assert.Equal(t, 11, r.MaxAdmits(10*time.Millisecond)) // 1 ms apart, both ends counted
	})
}
