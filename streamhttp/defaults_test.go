package streamhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// With the default options, an idle stream gets a keep-alive after exactly
// 15 s, and a client that stops reading is cut off after exactly 10 s, on
// the fake clock of a synctest bubble.
func TestDefaultTimings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		h := newHandler(t, src, config{Listen: listen.Options{Capabilities: caps()}})
		l := testkit.NewPipeListener()
		srv := &http.Server{Handler: h}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		tr := &http.Transport{DialContext: l.Dial}
		client := &http.Client{Transport: tr}

		// A reading client: keep-alives every 15 s of idleness.
		req, err := http.NewRequest(http.MethodPost, "http://pipe/", strings.NewReader(listenBody(`"r"`, `{"toolsListChanged":true}`)))
		require.NoError(t, err)
		req.Header = listenHeaders()
		resp, err := client.Do(req)
		require.NoError(t, err)
		s := newSSE(resp)
		s.message(t)
		start := time.Now()
		for i := 1; i <= 2; i++ {
			f, err := s.frame()
			require.NoError(t, err)
			require.True(t, f.IsComment)
			assert.Equal(t, time.Duration(i)*streamhttp.DefaultKeepAlive, time.Since(start))
		}

		// A stalled client: sends its POST, never reads.
		conn, err := l.Dial(context.Background(), "", "")
		require.NoError(t, err)
		body := listenBody(`"stalled"`, `{}`)
		go func() {
			// A pipe write blocks until the server reads it.
			_, _ = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: pipe\r\nContent-Type: application/json\r\n"+
				"Content-Length: %d\r\n\r\n%s", len(body), body)
		}()
		stalled := streamOf(t, src, "stalled")
		opened := time.Now()
		reason := reasonOf(t, stalled)
		assert.Equal(t, streamhttp.DefaultWriteTimeout, time.Since(opened), "cut when the ack's write deadline expired")
		assert.ErrorIs(t, reason, listen.ErrDisconnected)
		assert.ErrorIs(t, reason, os.ErrDeadlineExceeded)
		conn.Close()

		// The reading stream was not disturbed.
		st := streamOf(t, src, "r")
		st.Send(listen.ToolsListChanged())
		assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
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
}
