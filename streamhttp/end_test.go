package streamhttp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// servingPaths are the three ways a Handler serves a stream: an HTTP/1.1
// connection it took over, an HTTP/1.1 response inside net/http
// (NoTakeover), and an HTTP/2 stream.
var servingPaths = []struct {
	name       string
	noTakeover bool
	http2      bool
}{
	{name: "HTTP/1.1 taken over"},
	{name: "HTTP/1.1 NoTakeover", noTakeover: true},
	{name: "HTTP/2", http2: true},
}

// However a stream ends, on every path: its slot is free and Stats count it
// closed before OnClose runs, and its client sees the response end only
// after OnClose has returned.
func TestEndOrder(t *testing.T) {
	for _, p := range servingPaths {
		for _, ending := range []string{"complete", "client leaves"} {
			t.Run(p.name+"/"+ending, func(t *testing.T) {
				var e *env
				inOnClose := make(chan listen.Stats, 1)
				e = newEnv(t, nil, &config{
					NoTakeover: p.noTakeover,
					OnClose:    func(*listen.Subscription, error) { inOnClose <- e.h.Server().Stats() },
				}, envConfig{http2: p.http2})
				s := e.listen(t, `"o"`, `{}`)
				s.message(t)
				st := streamOf(t, e.src, "o")
				if ending == "complete" {
					st.End()
					assert.Equal(t, "complete", s.message(t)["result"].(map[string]any)["resultType"])
					s.end(t)
					select {
					case c := <-e.closes:
						assert.ErrorIs(t, c.reason, listen.ErrComplete)
					default:
						t.Fatal("the response ended before OnClose returned")
					}
				} else {
					s.resp.Body.Close()
					assert.ErrorIs(t, recv(t, e.closes, "OnClose").reason, listen.ErrDisconnected)
				}
				want := listen.Stats{Opened: 1, Closed: 1}
				assert.Equal(t, want, recv(t, inOnClose, "the Stats seen by OnClose"), "Stats seen by OnClose")
				assert.Equal(t, want, e.h.Server().Stats())
			})
		}
	}
}

// Shutdown returns only once every stream has ended, OnClose included; a
// stream's response ends only after its OnClose has returned, on a
// taken-over connection as inside net/http. Checked in a synctest bubble:
// while OnClose blocks, every other goroutine (the client reading to the
// end, Shutdown) is durably blocked.
func TestShutdownWaitsForOnClose(t *testing.T) {
	for _, noTakeover := range []bool{false, true} {
		name := "taken over"
		if noTakeover {
			name = "NoTakeover"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listentest.NewSource()
				entered, release := make(chan struct{}), make(chan struct{})
				h := newHandler(t, src, config{
					Listen:     listen.Options{Capabilities: caps()},
					NoTakeover: noTakeover,
					OnClose: func(*listen.Subscription, error) {
						close(entered)
						<-release
					},
				})
				l := testkit.NewPipeListener()
				srv := &http.Server{Handler: h}
				served := make(chan error, 1)
				go func() { served <- srv.Serve(l) }()
				tr := &http.Transport{DialContext: l.Dial}
				req, err := http.NewRequest(http.MethodPost, "http://pipe/", strings.NewReader(listenBody(`"w"`, `{}`)))
				require.NoError(t, err)
				req.Header = listenHeaders()
				resp, err := (&http.Client{Transport: tr}).Do(req)
				require.NoError(t, err)
				s := newSSE(resp)
				s.message(t)

				// The client reads to the end of the response.
				type end struct {
					last string
					err  error
				}
				ended := make(chan end, 1)
				go func() {
					var last string
					for {
						f, err := s.frame()
						if err != nil {
							ended <- end{last, err}
							return
						}
						if !f.IsComment {
							last = f.Data
						}
					}
				}()
				shut := make(chan error, 1)
				go func() { shut <- h.Shutdown(context.Background()) }()

				<-entered
				synctest.Wait()
				select {
				case got := <-ended:
					t.Error("the response ended while OnClose ran")
					ended <- got
				default:
				}
				select {
				case <-shut:
					t.Error("Shutdown returned while OnClose ran")
				default:
				}
				assert.Equal(t, listen.Stats{Opened: 1, Closed: 1, Draining: true}, h.Server().Stats(), "the slot is free during OnClose")

				close(release)
				require.NoError(t, <-shut)
				got := <-ended
				assert.ErrorIs(t, got.err, io.EOF)
				assert.Contains(t, got.last, `"resultType":"complete"`)
				resp.Body.Close()
				require.NoError(t, srv.Close())
				tr.CloseIdleConnections()
				assert.ErrorIs(t, <-served, http.ErrServerClosed)
				synctest.Wait()
			})
		})
	}
}

// A panic in OnClose is handled the same way on every path: it is
// recovered and logged to the server's ErrorLog, the stream still ends
// cleanly (its client gets the completion and the end of the response),
// Stats and Shutdown see it ended, and the server keeps serving.
func TestOnClosePanics(t *testing.T) {
	for _, p := range servingPaths {
		t.Run(p.name, func(t *testing.T) {
			var logged testkit.LogBuffer
			e := newEnv(t, nil, &config{
				NoTakeover: p.noTakeover,
				OnClose: func(sub *listen.Subscription, _ error) {
					if sub.ID().String() == "p" {
						panic("OnClose failed")
					}
				},
				Logger: slog.New(slog.NewTextHandler(&logged, nil)),
			}, envConfig{http2: p.http2})
			s := e.listen(t, `"p"`, `{}`)
			s.message(t)
			streamOf(t, e.src, "p").End()
			assert.Equal(t, "complete", s.message(t)["result"].(map[string]any)["resultType"])
			s.end(t)
			assert.Contains(t, logged.String(), `msg="listen: OnClose panicked" panic="OnClose failed"`)
			assert.Equal(t, listen.Stats{Opened: 1, Closed: 1}, e.h.Server().Stats())

			next := e.listen(t, `"next"`, `{}`)
			assert.Equal(t, spec.MethodAcknowledged, next.message(t)["method"])
			require.NoError(t, e.h.Shutdown(context.Background()))
			assert.Equal(t, "complete", next.message(t)["result"].(map[string]any)["resultType"])
			next.end(t)
		})
	}
}
