package cluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/testkit"
)

// lines returns the lines of out.
func lines(out string) []string {
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// Options.Logger writes at most one drop line per dropLogInterval,
// however many drops a forger causes: the first drop at once, the ones
// that follow summed into one line at the end of the interval, with their
// count by reason; a drop after a quiet interval is logged at once again.
func TestLoggerDropRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf testkit.LogBuffer
		hooks := newHooks(Options{Logger: buf.Logger(slog.LevelInfo)}, dropLogInterval)
		forged := DropInfo{Reason: reasonUnauthenticated, Count: 1, Bytes: 152,
			Err: errors.New("cluster: message not signed")}
		for range 20000 {
			hooks.drop(forged)
		}
		hooks.drop(DropInfo{Reason: reasonTooLarge, Count: 1, Bytes: 2 << 20})
		got := lines(buf.String())
		require.Len(t, got, 1, "the first drop is logged at once, the others wait")
		assert.Contains(t, got[0], `level=WARN msg="cluster drop" reason=unauthenticated count=1 bytes=152 error="cluster: message not signed"`)

		time.Sleep(dropLogInterval - time.Millisecond)
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
				hooks.drop(forged)
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		assert.Len(t, lines(buf.String()), 2+3)

		// After a quiet interval, a drop is logged at once.
		time.Sleep(dropLogInterval)
		synctest.Wait()
		hooks.drop(forged)
		got = lines(buf.String())
		require.Len(t, got, 2+3+1)
		assert.Contains(t, got[5], `msg="cluster drop" reason=unauthenticated`)
	})
}

// The drop lines' interval; a negative one logs every drop. A logger whose
// level disables warnings gets nothing formatted or counted. The user's
// hooks run after the logger's lines.
func TestLoggerDropInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var every testkit.LogBuffer
		hooks := newHooks(Options{Logger: every.Logger(slog.LevelInfo)}, -1)
		for range 5 {
			hooks.drop(DropInfo{Reason: reasonReplayed, Count: 1})
		}
		assert.Len(t, lines(every.String()), 5)

		var buf testkit.LogBuffer
		var seen []string
		hooks = newHooks(Options{Logger: buf.Logger(slog.LevelInfo), OnDrop: func(i DropInfo) {
			seen = append(seen, i.Reason)
			assert.NotEmpty(t, buf.String(), "after the logger's line")
		}}, time.Second)
		for range 3 {
			hooks.drop(DropInfo{Reason: reasonStale, Count: 1})
		}
		hooks.drop(DropInfo{Reason: reasonSlowConsumer, Count: 40})
		time.Sleep(time.Second)
		synctest.Wait()
		got := lines(buf.String())
		require.Len(t, got, 2)
		assert.Contains(t, got[1], `msg="cluster drops" count=42 bytes=0 reasons.slow_consumer=40 reasons.stale=2`)
		assert.Equal(t, []string{reasonStale, reasonStale, reasonStale, reasonSlowConsumer}, seen)

		var none testkit.LogBuffer
		quiet := newHooks(Options{Logger: none.Logger(slog.LevelError)}, dropLogInterval)
		quiet.drop(DropInfo{Reason: reasonStale, Count: 1})
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, none.String())
		newHooks(Options{}, dropLogInterval).drop(DropInfo{Reason: reasonStale, Count: 1}) // no logger, no hook: nothing
	})
}

// panicHandler is a slog.Handler whose Handle panics.
type panicHandler struct{ slog.Handler }

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("handler") }

// A logger whose handler panics while the summary is written (on the
// timer's goroutine) does not take the process down.
func TestLoggerPanickingHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks := newHooks(Options{Logger: slog.New(panicHandler{})}, time.Second)
		assert.Panics(t, func() { hooks.drop(DropInfo{Reason: reasonStale, Count: 1}) },
			"on the caller's goroutine the node recovers it")
		hooks.drop(DropInfo{Reason: reasonStale, Count: 1})
		time.Sleep(time.Second)
		synctest.Wait()
	})
}
