package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/internal/testkit"
)

// lines returns the lines of out.
func lines(out string) []string {
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// SlogHooks writes at most one drop line per DefaultDropLogInterval,
// however many drops a forger causes: the first drop at once, the ones
// that follow summed into one line at the end of the interval, with their
// count by reason; a drop after a quiet interval is logged at once again.
func TestSlogHooksDropRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf testkit.LogBuffer
		hooks := cluster.SlogHooks(buf.Logger(slog.LevelInfo))
		forged := cluster.DropInfo{Reason: cluster.ReasonUnauthenticated, Count: 1, Bytes: 152,
			Err: errors.New("cluster: message not signed")}
		for range 20000 {
			hooks.OnDrop(forged)
		}
		hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonTooLarge, Count: 1, Bytes: 2 << 20})
		got := lines(buf.String())
		require.Len(t, got, 1, "the first drop is logged at once, the others wait")
		assert.Contains(t, got[0], `level=WARN msg="cluster drop" reason=unauthenticated count=1 bytes=152 error="cluster: message not signed"`)

		time.Sleep(cluster.DefaultDropLogInterval - time.Millisecond)
		synctest.Wait()
		assert.Len(t, lines(buf.String()), 1, "nothing more within the interval")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		got = lines(buf.String())
		require.Len(t, got, 2, "one summary at the end of the interval")
		assert.Contains(t, got[1], `level=WARN msg="cluster drops" count=20000 bytes=`+
			`5137000 reasons.too_large=1 reasons.unauthenticated=19999 error="cluster: message not signed"`)

		// A sustained flood: one line per interval.
		for range 30 {
			for range 100 {
				hooks.OnDrop(forged)
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		assert.Len(t, lines(buf.String()), 2+3)

		// After a quiet interval, a drop is logged at once.
		time.Sleep(cluster.DefaultDropLogInterval)
		synctest.Wait()
		hooks.OnDrop(forged)
		got = lines(buf.String())
		require.Len(t, got, 2+3+1)
		assert.Contains(t, got[5], `msg="cluster drop" reason=unauthenticated`)
	})
}

// SlogHooksEvery takes the interval; a negative one logs every drop. A
// logger whose level disables warnings gets nothing formatted or counted.
func TestSlogHooksEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var every testkit.LogBuffer
		hooks := cluster.SlogHooksEvery(every.Logger(slog.LevelInfo), -1)
		for range 5 {
			hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonReplayed, Count: 1})
		}
		assert.Len(t, lines(every.String()), 5)

		var buf testkit.LogBuffer
		hooks = cluster.SlogHooksEvery(buf.Logger(slog.LevelInfo), time.Second)
		for range 3 {
			hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonStale, Count: 1})
		}
		hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonSlowConsumer, Count: 40})
		time.Sleep(time.Second)
		synctest.Wait()
		got := lines(buf.String())
		require.Len(t, got, 2)
		assert.Contains(t, got[1], `msg="cluster drops" count=42 bytes=0 reasons.slow_consumer=40 reasons.stale=2`)

		var none testkit.LogBuffer
		quiet := cluster.SlogHooks(none.Logger(slog.LevelError))
		quiet.OnDrop(cluster.DropInfo{Reason: cluster.ReasonStale, Count: 1})
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, none.String())
		assert.NotNil(t, cluster.SlogHooks(nil))
	})
}

// Stats.DroppedBytes counts the bytes of every dropped message, those a
// bridge skipped unread (Node.DropTooLarge) too, which Hooks.OnDrop
// reports like the ones Receive drops.
func TestNodeDroppedBytes(t *testing.T) {
	b := &broker{}
	a := b.join(t, cluster.Options{AuthKeys: [][]byte{key}, MaxMessageBytes: 1024}, listen.Filter{"k": true})
	a.node.Receive(cluster.Message{Data: []byte(`{"v":1}`)})               // unauthenticated
	a.node.Receive(cluster.Message{Data: bytes.Repeat([]byte{'x'}, 2000)}) // too large
	a.node.DropTooLarge(5000)
	st := a.node.Stats()
	assert.Equal(t, cluster.Drops{Unauthenticated: 1, TooLarge: 2}, st.Dropped)
	assert.Equal(t, uint64(7+2000+5000), st.DroppedBytes)
	assert.Equal(t, []cluster.DropReason{cluster.ReasonUnauthenticated, cluster.ReasonTooLarge, cluster.ReasonTooLarge},
		a.rec.dropReasons())
	assert.Equal(t, 5000, a.rec.drops[2].Bytes)
}

// panicHandler is a slog.Handler whose Handle panics.
type panicHandler struct{ slog.Handler }

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("handler") }

// A logger whose handler panics while the summary is written (on the
// timer's goroutine) does not take the process down.
func TestSlogHooksPanickingHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks := cluster.SlogHooksEvery(slog.New(panicHandler{}), time.Second)
		assert.Panics(t, func() { hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonStale, Count: 1}) },
			"on the caller's goroutine the node recovers it")
		hooks.OnDrop(cluster.DropInfo{Reason: cluster.ReasonStale, Count: 1})
		time.Sleep(time.Second)
		synctest.Wait()
	})
}
