package testkit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/testkit"
)

// An http.Server on a PipeListener serves an http.Client dialling through
// it, inside a synctest bubble; after Close, Accept and Dial fail with
// net.ErrClosed.
func TestPipeListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := testkit.NewPipeListener()
		assert.Equal(t, "pipe", l.Addr().Network())
		assert.Equal(t, "pipe", l.Addr().String())
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "hello "+r.URL.Path)
		})}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()

		tr := &http.Transport{DialContext: l.Dial}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://pipe/x")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, "hello /x", string(body))

		require.NoError(t, srv.Shutdown(context.Background()))
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
		_, err = l.Accept()
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = l.Dial(context.Background(), "", "")
		assert.ErrorIs(t, err, net.ErrClosed)
		assert.NoError(t, l.Close(), "Close is idempotent")
	})
}

// Dial gives up when its context ends before anyone accepts.
func TestPipeListenerDialContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := testkit.NewPipeListener()
		defer l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.Dial(ctx, "", "")
		assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	})
}
