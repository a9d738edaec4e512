// Package quotatest drives cluster.Quota instances with a churn of
// listens and measures what the deployment holds, for the tests of the
// bridges on a real broker (natsbridge, redisbridge).
//
// Run opens listens of one tenant ("hot") at a fixed rate, round robin
// over the instances, each held for a random time, so that the tenant
// asks for more than its quota, and keeps a few listens of another tenant
// ("calm", under its quota) opening and closing too. It samples the hot
// tenant's open listens (admitted, not yet released) every Sample and
// also tracks their exact maximum.
//
// # Goroutines
//
// Run starts a sampler and one timer callback per admitted listen (its
// release); it returns once every one of them has ended.
package quotatest

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
)

// Options returns QuotaOptions whose tenant is the part of a listen's
// Auth (a string "tenant/principal") before the slash, limited to q, and
// whose principal (not limited) is the part after it.
func Options(q int) cluster.QuotaOptions {
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

// Config is one churn run.
type Config struct {
	Quotas []*cluster.Quota
	// Rate is the hot tenant's open attempts per second, over all
	// instances; Duration how long Run opens.
	Rate     int
	Duration time.Duration
	// MinLife and MaxLife bound the time an admitted listen stays open
	// (uniform).
	MinLife, MaxLife time.Duration
	// Sample is the sampling period.
	Sample time.Duration
	// Window is the width of the sliding window over which MaxWindow
	// counts admissions (the slack's Interval + delivery time).
	Window time.Duration
	// Calm is how many listens the calm tenant keeps open (its quota must
	// be above it); each is closed and opened again every MaxLife.
	Calm int
}

// Result is what a run measured.
type Result struct {
	// Samples is how many samples were taken; MaxSampled the largest,
	// MaxExact the largest number of the hot tenant's listens open at
	// once, counted at every admission.
	Samples              int
	MaxSampled, MaxExact int
	// Admitted and Refused count the hot tenant's attempts.
	Admitted, Refused int
	// MaxWindow is the most hot listens admitted within one Window.
	MaxWindow int
	// CalmRefused counts the calm tenant's refused attempts.
	CalmRefused int
	// MaxLocal is, per instance, the most hot listens open there at once.
	MaxLocal []int
}

// Run runs one churn. The quotas must be joined to their bridges.
func Run(ctx context.Context, cfg Config) Result {
	var (
		open     atomic.Int64
		maxExact atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		admits   []time.Time
		res      Result
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

	stopSampling := make(chan struct{})
	sampled := make(chan [2]int)
	go func() { // the sampler: ends when stopSampling is closed
		tick := time.NewTicker(cfg.Sample)
		defer tick.Stop()
		n, m := 0, 0
		for {
			select {
			case <-stopSampling:
				sampled <- [2]int{n, m}
				return
			case <-tick.C:
				n++
				m = max(m, int(open.Load()))
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
	res.Samples, res.MaxSampled = s[0], s[1]
	res.MaxExact = int(maxExact.Load())
	res.CalmRefused = int(calmRef.Load())
	for i := range maxLocal {
		res.MaxLocal = append(res.MaxLocal, int(maxLocal[i].Load()))
	}
	j := 0
	for i, t := range admits {
		for t.Sub(admits[j]) > cfg.Window {
			j++
		}
		res.MaxWindow = max(res.MaxWindow, i-j+1)
	}
	return res
}
