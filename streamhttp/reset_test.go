package streamhttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/rawh2"
)

// countOpens counts the calls of its Source's Open.
type countOpens struct {
	listen.Source
	n atomic.Int32
}

func (c *countOpens) Open(ctx context.Context, req *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
	c.n.Add(1)
	return c.Source.Open(ctx, req, f)
}

// waitQuota admits a listen once its request's context has ended.
type waitQuota struct{}

func (waitQuota) Acquire(ctx context.Context, _ *listen.Request) (func(), error) {
	<-ctx.Done()
	return func() {}, nil
}

// A listen whose HTTP/2 stream the client resets after sending it (a rapid
// reset) is neither admitted nor opened, and nothing is written for it,
// over h2c and over TLS: the check runs once the body has been read and
// again once the listen holds its slot, right before the Source would be
// opened. Each hook below holds the request until its reset has reached
// the server, at one of those two points.
func TestResetListenIsNotOpened(t *testing.T) {
	type hooks struct {
		authenticate func(*http.Request) (any, error)
		quota        listen.Quota
	}
	waitReset := func(r *http.Request) { <-r.Context().Done() }
	points := []struct {
		name  string
		hooks hooks
	}{
		{"reset while the body is read", hooks{authenticate: func(r *http.Request) (any, error) { waitReset(r); return nil, nil }}},
		{"reset while the slot is taken", hooks{quota: waitQuota{}}},
	}
	for _, tlsOn := range []bool{false, true} {
		for _, p := range points {
			name := "h2c/" + p.name
			if tlsOn {
				name = "TLS h2/" + p.name
			}
			t.Run(name, func(t *testing.T) {
				h, err := hub.New(hub.Options{})
				require.NoError(t, err)
				opts := config{Authenticate: p.hooks.authenticate}
				opts.Listen.Capabilities, opts.Listen.Quota = caps(), p.hooks.quota
				var errs int
				opts.OnRefuse = func(*listen.Request, error) { errs++ }
				src := &countOpens{Source: h}
				lh := newHandler(t, src, opts)
				served := make(chan struct{}, 1)
				ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					defer func() { served <- struct{}{} }()
					lh.ServeHTTP(w, r)
				}))
				var conn net.Conn
				scheme := "http"
				if tlsOn {
					ts.EnableHTTP2 = true
					ts.StartTLS()
					pool := x509.NewCertPool()
					pool.AddCert(ts.Certificate())
					c, err := tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}, ServerName: "example.com"})
					require.NoError(t, err)
					require.Equal(t, "h2", c.ConnectionState().NegotiatedProtocol)
					conn, scheme = c, "https"
				} else {
					ts.Config.Protocols = new(http.Protocols)
					ts.Config.Protocols.SetHTTP1(true)
					ts.Config.Protocols.SetUnencryptedHTTP2(true)
					ts.Start()
					conn, err = net.Dial("tcp", ts.Listener.Addr().String())
					require.NoError(t, err)
				}
				defer ts.Close()
				defer conn.Close()
				go func() { _, _ = io.Copy(io.Discard, conn) }() // the server's SETTINGS and the like

				// HEADERS, DATA and RST_STREAM, a few hundred bytes.
				out := rawh2.ResetListen(rawh2.Preface(), scheme, ts.Listener.Addr().String(), "/", 1, listenBody(`"reset"`, `{"toolsListChanged":true}`))
				_, err = conn.Write(out)
				require.NoError(t, err)
				<-served

				st := lh.Server().Stats()
				assert.Zero(t, st.Opened, "opened")
				assert.Zero(t, st.Active, "active")
				assert.Zero(t, src.n.Load(), "Source.Open calls")
				assert.Zero(t, errs, "nothing is answered")
			})
		}
	}
}
