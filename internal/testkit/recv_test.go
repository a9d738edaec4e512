package testkit_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen/internal/testkit"
)

// Recv returns what comes in time, and fails the test when the channel is
// closed or nothing comes within the bound.
func TestRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := make(chan int, 1)
		go func() {
			time.Sleep(time.Second)
			c <- 7
		}()
		assert.Equal(t, 7, testkit.Recv(t, c, 2*time.Second))

		for name, f := range map[string]func(tb testing.TB){
			"closed":  func(tb testing.TB) { closed := make(chan int); close(closed); testkit.Recv(tb, closed, time.Second) },
			"nothing": func(tb testing.TB) { testkit.Recv(tb, make(chan int), time.Second) },
		} {
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() { // Fatal ends this goroutine (runtime.Goexit)
				defer close(done)
				f(rec)
			}()
			<-done
			assert.True(t, rec.failed, name)
		}
	})
}

// recorder is a testing.TB whose Fatal and Fatalf record the failure and
// end the goroutine, as testing's do, without failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(...any)          { r.failed = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
