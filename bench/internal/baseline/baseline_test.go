package baseline_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/mcplisten/listen/bench/internal/baseline"
)

// Serve returns only once the shutdown it started has: a request in flight
// when ctx ends is given its grace before the process (main) goes on to
// exit. In the bubble, synctest.Wait returns once every goroutine is
// blocked: the handler on release, and serve either waiting for its
// shutdown (which waits for the handler) or already returned. stop has
// run by then.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServeWaitsForShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			close(started)
			<-release
			_, _ = io.WriteString(w, "done")
		})}
		ln := newPipeListener()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		returned := make(chan error, 1)
		stopped := make(chan struct{}, 1)
		go func() { returned <- baseline.Serve(ctx, hs, ln, time.Hour, func() { stopped <- struct{}{} }) }()

		tr := &http.Transport{DialContext: ln.Dial}
		defer tr.CloseIdleConnections()
		got := make(chan string, 1)
		go func() {
			resp, err := (&http.Client{Transport: tr}).Get("http://pipe/")
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			got <- string(b)
		}()

		<-started
		cancel()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Errorf("Serve returned (%v) with a request in flight, before its shutdown did", err)
			returned <- err
		default:
		}
		select {
		case <-stopped:
		default:
			t.Error("stop was not called before the shutdown")
		}
		close(release)
		if s := <-got; s != "done" {
			t.Errorf("the request in flight got %q, want done", s)
		}
		if err := <-returned; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
