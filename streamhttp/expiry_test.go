package streamhttp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// principal is what the tests' Authenticate returns: a user and the expiry
// of the token it presented.
type principal struct {
	user    string
	expires time.Time
}

// expiringAuth authenticates "Bearer <user> <seconds>" as a token of user
// that expires that many seconds from now (0: never).
func expiringAuth(r *http.Request) (any, error) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 3 || f[0] != "Bearer" {
		return nil, errors.New("no token")
	}
	d, err := time.ParseDuration(f[2] + "s")
	if err != nil {
		return nil, err
	}
	p := &principal{user: f[1]}
	if d != 0 {
		p.expires = time.Now().Add(d)
	}
	return p, nil
}

func principalExpiry(_ *http.Request, auth any) time.Time { return auth.(*principal).expires }

// A stream whose credential expires ends exactly when the expiry passes:
// its client gets the completion result, OnClose the reason listen.ErrExpired
// (listen.ErrExpired), over HTTP/1.1 taken over or not,
// and HTTP/2; a stream whose credential does not expire, and one that
// expires later, stay open. Before, nothing ended a stream at its
// credential's expiry.
func TestExpiryEndsTheStream(t *testing.T) {
	for _, tt := range []struct {
		name       string
		h2         bool
		noTakeover bool
	}{{"HTTP/1.1 taken over", false, false}, {"HTTP/1.1 inside net/http", false, true}, {"HTTP/2", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listentest.NewSource()
				reasons := make(chan error, 3)
				p := newPipeServer(t, src, config{
					NoTakeover:   tt.noTakeover,
					KeepAlive:    time.Hour,
					Authenticate: expiringAuth,
					Expiry:       principalExpiry,
					OnClose:      func(_ *listen.Subscription, reason error) { reasons <- reason },
				}, tt.h2)
				open := func(id, token string) *sse {
					req, err := http.NewRequest(http.MethodPost, "http://pipe/", strings.NewReader(listenBody(id, `{"toolsListChanged":true}`)))
					require.NoError(t, err)
					req.Header = listenHeaders()
					req.Header.Set("Authorization", "Bearer "+token)
					resp, err := (&http.Client{Transport: p.tr}).Do(req)
					require.NoError(t, err)
					t.Cleanup(func() { resp.Body.Close() })
					require.Equal(t, http.StatusOK, resp.StatusCode)
					s := newSSE(resp)
					assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
					return s
				}
				start := time.Now()
				soon := open(`"soon"`, "ann 60")
				later := open(`"later"`, "bob 120")
				never := open(`"never"`, "cy 0")

				m := soon.message(t)
				assert.Equal(t, 60*time.Second, time.Since(start), "ended at the expiry")
				assert.Equal(t, "complete", m["result"].(map[string]any)["resultType"])
				assert.Equal(t, "expired", m["result"].(map[string]any)["_meta"].(map[string]any)[spec.MetaEndReason])
				soon.end(t)
				r := <-reasons
				assert.ErrorIs(t, r, listen.ErrExpired)
				assert.ErrorIs(t, r, listen.ErrExpired)
				assert.Equal(t, uint64(1), p.h.Server().Stats().Expired)
				assert.Equal(t, 2, p.h.Server().Stats().Active)

				later.message(t)
				assert.Equal(t, 120*time.Second, time.Since(start))
				later.end(t)
				assert.ErrorIs(t, <-reasons, listen.ErrExpired)

				time.Sleep(10 * time.Minute) // never expires
				st := streamOf(t, src, "never")
				st.Send(listen.ToolsListChanged())
				assert.Equal(t, spec.MethodToolsListChanged, never.message(t)["method"])
				st.End()
				never.message(t)
				never.end(t)
				assert.ErrorIs(t, <-reasons, listen.ErrComplete)
				p.close(t)
				synctest.Wait()
			})
		})
	}
}

// A listen whose credential has already expired is refused like a failed
// Authenticate: 401 "Unauthorized", cause listen.ErrExpired; the Source is never
// opened.
func TestExpiryAlreadyPast(t *testing.T) {
	var causes []error
	e := newEnv(t, nil, &config{
		Authenticate: expiringAuth,
		Expiry:       principalExpiry,
		OnRefuse:     func(_ *listen.Request, err error) { causes = append(causes, err) },
	}, envConfig{})
	hdr := listenHeaders()
	hdr.Set("Authorization", "Bearer ann -1")
	resp := e.do(t, http.MethodPost, listenBody("1", `{"toolsListChanged":true}`), hdr)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b := readError(t, resp)
	assert.Equal(t, jsonrpc.CodeInvalidRequest, b.Error.Code)
	assert.Equal(t, streamhttp.MsgUnauthorized, b.Error.Message)
	require.Len(t, causes, 1)
	assert.ErrorIs(t, causes[0], listen.ErrExpired)
	assert.Empty(t, e.src.Streams())
}

// On the fast path (Linux: no goroutine per idle stream) an expiring hub
// stream ends at its expiry too, through a runtime timer, and so on the
// portable path.
func TestExpiryOnHubStreams(t *testing.T) {
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{
				Expiry: func(*http.Request, any) time.Time { return time.Now().Add(50 * time.Millisecond) },
			}, 0)
			c := e.dial(t, `"x"`, `{"toolsListChanged":true}`, "", 0).open(t)
			if !p.portable {
				assert.Equal(t, 1, streamhttp.FastStreams(e.h))
			}
			assert.Equal(t, `{"jsonrpc":"2.0","id":"x","result":{"_meta":{"io.github.mcplisten/endReason":"expired","io.modelcontextprotocol/subscriptionId":"x"},"resultType":"complete"}}`, c.data(t))
			c.s.end(t)
			cl := <-e.closes
			assert.ErrorIs(t, cl.reason, listen.ErrExpired)
		})
	}
}
