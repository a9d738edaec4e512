package streamhttp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/listentest"
)

// OnKeepAlive is told about every keep-alive comment written, with the
// stream's subscription, on both HTTP/1.x paths (taken over and inside
// net/http); a panic in it does not disturb the stream.
func TestOnKeepAlive(t *testing.T) {
	for _, noTakeover := range []bool{false, true} {
		name := "takeover"
		if noTakeover {
			name = "net/http"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var ids []string
				src := listentest.NewSource()
				h, err := (config{
					Listen:     listen.Options{Capabilities: caps()},
					KeepAlive:  time.Second,
					NoTakeover: noTakeover,
					OnKeepAlive: func(sub *listen.Subscription) {
						mu.Lock()
						ids = append(ids, sub.ID().Raw())
						n := len(ids)
						mu.Unlock()
						if n == 2 {
							panic("a broken hook")
						}
					},
				}).build(src)
				require.NoError(t, err)
				l := testkit.NewPipeListener()
				srv := &http.Server{Handler: h}
				served := make(chan error, 1)
				go func() { served <- srv.Serve(l) }()
				tr := &http.Transport{DialContext: l.Dial}
				client := &http.Client{Transport: tr}

				req, err := http.NewRequest(http.MethodPost, "http://pipe/", strings.NewReader(listenBody(`"k"`, `{"toolsListChanged":true}`)))
				require.NoError(t, err)
				req.Header = listenHeaders()
				resp, err := client.Do(req)
				require.NoError(t, err)
				s := newSSE(resp)
				s.message(t) // the acknowledgement
				for range 3 {
					f, err := s.frame()
					require.NoError(t, err)
					require.True(t, f.IsComment)
				}
				synctest.Wait() // the third hook call follows its write
				mu.Lock()
				assert.Equal(t, []string{`"k"`, `"k"`, `"k"`}, ids)
				mu.Unlock()

				st := streamOf(t, src, "k")
				st.Send(listen.ToolsListChanged())
				s.message(t)
				st.End()
				s.message(t)
				s.end(t)
				resp.Body.Close()
				require.NoError(t, h.Shutdown(context.Background()))
				require.NoError(t, srv.Close())
				tr.CloseIdleConnections()
				assert.ErrorIs(t, <-served, http.ErrServerClosed)
				synctest.Wait()
			})
		})
	}
}
