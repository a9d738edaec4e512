// Quota churn: drives cluster.Quota instances with a churn of listens and
// measures what the deployment holds, for the tests of a bridge's quota on
// a real broker (natsbridge and redisbridge use it). Churn opens listens
// of one tenant ("hot") at a fixed rate, round robin over the instances,
// each held for a random time, and keeps a few listens of another tenant
// ("calm") opening and closing; it samples the hot tenant's open listens
// every Sample and tracks their exact maximum. It starts a sampler and
// one timer callback per admitted listen, and returns once every one has
// ended.

package clustertest

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
)

// QuotaOptions returns QuotaOptions whose tenant is the part of a listen's
// Auth (a string "tenant/principal") before the slash, limited to q, and
// whose principal (not limited) is the part after it.
func QuotaOptions(q int) cluster.QuotaOptions {
	return cluster.QuotaOptions{
		Tenant: func(r *listen.Request) (string, int) {
			s, _ := r.Auth.(string)
			t, _, _ := strings.Cut(s, "/")
			return t, q
		},
		Principal: func(r *listen.Request) (string, int) {
			s, _ := r.Auth.(string)
			_, p, _ := strings.Cut(s, "/")
			return p, 0
		},
	}
}

// ChurnConfig is one churn run.
type ChurnConfig struct {
	Quotas []*cluster.Quota
	// Rate is the hot tenant's open attempts per second, over all
	// instances; Duration how long Churn opens.
	Rate     int
	Duration time.Duration
	// MinLife and MaxLife bound the time an admitted listen stays open
	// (uniform).
	MinLife, MaxLife time.Duration
	// Sample is the sampling period.
	Sample time.Duration
	// Calm is how many listens the calm tenant keeps open (its quota must
	// be above it); each is closed and opened again every MaxLife.
	Calm int
}

// ChurnResult is what a run measured.
type ChurnResult struct {
	// Samples is how many samples were taken; MaxSampled the largest,
	// MaxExact the largest number of the hot tenant's listens open at
	// once, counted at every admission.
	Samples              int
	MaxSampled, MaxExact int
	// MaxGap is the longest time between two samples.
	MaxGap time.Duration
	// Mean is the mean of the samples taken while Churn opened listens
	// (the tenant's use of its quota).
	Mean float64
	// Admitted and Refused count the hot tenant's attempts.
	Admitted, Refused int
	// admits are the times of the hot tenant's admissions.
	admits []time.Time
	// CalmRefused counts the calm tenant's refused attempts.
	CalmRefused int
	// MaxLocal is, per instance, the most hot listens open there at once.
	MaxLocal []int
}

// Churn runs one churn. The quotas must be joined to their bridges.
func Churn(ctx context.Context, cfg ChurnConfig) ChurnResult {
	var (
		open     atomic.Int64
		maxExact atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		admits   []time.Time
		res      ChurnResult
		calmRef  atomic.Int64
	)
	local := make([]atomic.Int64, len(cfg.Quotas))
	maxLocal := make([]atomic.Int64, len(cfg.Quotas))
	raise := func(m *atomic.Int64, v int64) {
		for {
			old := m.Load()
			if v <= old || m.CompareAndSwap(old, v) {
				return
			}
		}
	}
	life := func() time.Duration {
		return cfg.MinLife + rand.N(cfg.MaxLife-cfg.MinLife+1)
	}

	begin := time.Now()
	stopSampling := make(chan struct{})
	sampled := make(chan ChurnResult)
	go func() { // the sampler: ends when stopSampling is closed
		tick := time.NewTicker(cfg.Sample)
		defer tick.Stop()
		var r ChurnResult
		last := time.Now()
		var sum, during int
		for {
			select {
			case <-stopSampling:
				sampled <- r
				return
			case now := <-tick.C:
				r.Samples++
				v := int(open.Load())
				r.MaxSampled = max(r.MaxSampled, v)
				if now.Sub(begin) < cfg.Duration {
					sum += v
					during++
					r.Mean = float64(sum) / float64(during)
				}
				r.MaxGap = max(r.MaxGap, now.Sub(last))
				last = now
			}
		}
	}()

	// The calm tenant: Calm listens, each reopened after MaxLife.
	var calmOpen func(i int)
	calmDone := make(chan struct{})
	calmOpen = func(i int) {
		q := cfg.Quotas[i%len(cfg.Quotas)]
		rel, err := q.Acquire(ctx, &listen.Request{Auth: "calm/c"})
		if err != nil {
			calmRef.Add(1)
			wg.Done()
			return
		}
		time.AfterFunc(cfg.MaxLife, func() {
			rel()
			select {
			case <-calmDone:
				wg.Done()
			default:
				calmOpen(i + 1)
			}
		})
	}
	for i := range cfg.Calm {
		wg.Add(1)
		calmOpen(i)
	}

	// Every millisecond, the attempts due since the start (a late tick
	// catches up), round robin over the instances.
	tick := time.NewTicker(time.Millisecond)
	start := time.Now()
	for i := 0; ctx.Err() == nil; {
		now := <-tick.C
		el := now.Sub(start)
		if el > cfg.Duration {
			break
		}
		for due := int(el * time.Duration(cfg.Rate) / time.Second); i < due; i++ {
			k := i % len(cfg.Quotas)
			rel, err := cfg.Quotas[k].Acquire(ctx, &listen.Request{Auth: "hot/p"})
			if err != nil {
				res.Refused++
				continue
			}
			res.Admitted++
			raise(&maxExact, open.Add(1))
			raise(&maxLocal[k], local[k].Add(1))
			mu.Lock()
			admits = append(admits, time.Now())
			mu.Unlock()
			wg.Add(1)
			time.AfterFunc(life(), func() {
				defer wg.Done()
				open.Add(-1)
				local[k].Add(-1)
				rel()
			})
		}
	}
	tick.Stop()
	close(calmDone)
	wg.Wait()
	close(stopSampling)
	s := <-sampled
	res.Samples, res.MaxSampled, res.MaxGap, res.Mean = s.Samples, s.MaxSampled, s.MaxGap, s.Mean
	res.MaxExact = int(maxExact.Load())
	res.CalmRefused = int(calmRef.Load())
	for i := range maxLocal {
		res.MaxLocal = append(res.MaxLocal, int(maxLocal[i].Load()))
	}
	res.admits = admits
	return res
}

// MaxAdmits returns the most hot listens admitted within a time w
// (both ends included).
func (r ChurnResult) MaxAdmits(w time.Duration) int {
	most, j := 0, 0
	for i, t := range r.admits {
		for t.Sub(r.admits[j]) > w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// CheckQuota runs the scenario of the bridges' quota tests on quotas (joined
// to their bridges on one broker, quota q per tenant): the instances see
// each other; under 1,000 opens per second of the hot tenant for 3 s
// (sampled every 10 ms) its open listens never exceed q plus the slack,
// and the calm tenant is never refused. The slack is bounded by the most
// listens admitted within Interval + d, d the delivery time: 20 ms are
// allowed, plus the longest stall the sampler saw (a loaded machine
// delays the instances' reports as much); then, after lose has
// cut every instance off the broker (and returned once each bridge has
// noticed), each instance holds the hot tenant to its local share ⌊q/n⌋
// during 1 s of churn.
func CheckQuota(t testing.TB, quotas []*cluster.Quota, q int, lose func()) {
	t.Helper()
	n := len(quotas)
	require.Eventually(t, func() bool {
		for _, qt := range quotas {
			if qt.Stats().Instances != n {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the instances see each other")

	cfg := ChurnConfig{
		Quotas: quotas, Rate: 1000, Duration: 3 * time.Second,
		MinLife: 100 * time.Millisecond, MaxLife: 300 * time.Millisecond,
		Sample: 10 * time.Millisecond, Calm: 30,
	}
	r := Churn(context.Background(), cfg)
	slack := r.MaxAdmits(10*time.Millisecond + 20*time.Millisecond + r.MaxGap)
	t.Logf("quota churn, broker up: max open %d (sampled %d, mean %.1f, %d samples, %v apart at most), Q %d, slack bound %d; admitted %d, refused %d; calm refused %d",
		r.MaxExact, r.MaxSampled, r.Mean, r.Samples, r.MaxGap.Round(time.Millisecond), q, slack, r.Admitted, r.Refused, r.CalmRefused)
	assert.LessOrEqual(t, r.MaxExact, q+slack, "over the quota and its slack")
	assert.GreaterOrEqual(t, r.Samples, 30, "a sample every 100 ms")
	assert.Positive(t, r.Refused, "the tenant asked for more than its quota")
	assert.Zero(t, r.CalmRefused, "the calm tenant was refused")

	lose()
	for _, qt := range quotas {
		s := qt.Stats()
		assert.True(t, s.Fallback)
		assert.Equal(t, n, s.Instances)
	}
	cfg.Duration = time.Second
	r = Churn(context.Background(), cfg)
	t.Logf("quota churn, broker down: max open %d (sampled %d), per instance %v; calm refused %d",
		r.MaxExact, r.MaxSampled, r.MaxLocal, r.CalmRefused)
	for _, m := range r.MaxLocal {
		assert.Equal(t, q/n, m, "an instance's most open listens, broker down")
	}
	assert.LessOrEqual(t, r.MaxExact, n*(q/n))
	assert.Zero(t, r.CalmRefused, "the calm tenant was refused")
}
