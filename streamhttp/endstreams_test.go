package streamhttp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// byUser authenticates a request as its X-User header.
func byUser(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil }

// EndStreams ends exactly the streams of the principals its match selects,
// over HTTP/1.1 (taken over, and inside net/http) and HTTP/2: each gets its
// completion result with the reason "revoked" and ends, is closed with
// ErrEnded (which also matches listen.ErrRevoked), and frees its slot; the other principals' streams go
// on. Before, a server had no way to end the streams of a revoked
// principal short of shutting every stream down.
func TestEndStreams(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts config
		cfg  envConfig
	}{
		{"HTTP/1.1 taken over", config{}, envConfig{}},
		{"HTTP/1.1 inside net/http", config{NoTakeover: true}, envConfig{}},
		{"HTTP/2", config{}, envConfig{http2: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Authenticate = byUser
			e := newEnv(t, nil, &opts, tt.cfg)
			open := func(id, user string) *sse {
				resp := e.do(t, http.MethodPost, listenBody(`"`+id+`"`, `{"toolsListChanged":true}`), headers("X-User", user))
				require.Equal(t, http.StatusOK, resp.StatusCode)
				s := newSSE(resp)
				assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
				return s
			}
			a1, a2, b1 := open("a1", "alice"), open("a2", "alice"), open("b1", "bob")

			var seen []any
			n := e.h.Server().EndStreams(func(auth any) bool {
				seen = append(seen, auth)
				return auth == "alice"
			}, listen.ErrRevoked)
			assert.Equal(t, 2, n)
			assert.ElementsMatch(t, []any{"alice", "alice", "bob"}, seen)
			for id, s := range map[string]*sse{"a1": a1, "a2": a2} {
				done := s.message(t)
				assert.Equal(t, `"`+id+`"`, subID(t, done, "result"))
				assert.Equal(t, "complete", done["result"].(map[string]any)["resultType"])
				assert.Equal(t, "revoked", done["result"].(map[string]any)["_meta"].(map[string]any)[spec.MetaEndReason])
				s.end(t)
				reason := reasonOf(t, streamOf(t, e.src, id))
				assert.ErrorIs(t, reason, listen.ErrRevoked)
				assert.ErrorIs(t, reason, listen.ErrRevoked)
			}
			for range 2 {
				c := recv(t, e.closes, "OnClose")
				assert.ErrorIs(t, c.reason, listen.ErrRevoked, "OnClose of %s", c.id)
			}
			assert.Equal(t, listen.Stats{Active: 1, Opened: 3, Closed: 2, Revoked: 2}, e.h.Server().Stats())
			assert.Zero(t, e.h.Server().EndStreams(func(auth any) bool { return auth == "alice" }, listen.ErrRevoked), "nothing left to end")

			st := streamOf(t, e.src, "b1")
			st.Send(listen.ToolsListChanged())
			assert.Equal(t, spec.MethodToolsListChanged, b1.message(t)["method"])
			st.End()
			b1.message(t)
			b1.end(t)
		})
	}
}

// A listen whose request was authenticated before EndStreams but whose body
// was still being read is ended too: it is acknowledged, then completed, as
// soon as it opens. So a server that makes Authenticate refuse a principal
// and then calls EndStreams leaves none of its streams behind.
func TestEndStreamsWhileTheBodyIsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		p := newPipeServer(t, src, config{Authenticate: byUser}, false)
		conn, err := p.l.Dial(context.Background(), "", "")
		require.NoError(t, err)
		defer conn.Close()
		body := listenBody(`"late"`, `{"toolsListChanged":true}`)
		head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: pipe\r\nX-User: alice\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		// A pipe write returns once the server has read it: the second one
		// returns once the handler reads the body, after authentication.
		_, err = io.WriteString(conn, head+body[:10])
		require.NoError(t, err)
		_, err = io.WriteString(conn, body[10:11])
		require.NoError(t, err)

		// require: were it not ended, the stream would stay open, and the
		// bubble's clock would run through its keep-alives for ever.
		require.Equal(t, 1, p.h.Server().EndStreams(func(auth any) bool { return auth == "alice" }, listen.ErrRevoked))
		assert.Zero(t, p.h.Server().EndStreams(func(auth any) bool { return auth == "bob" }, listen.ErrRevoked))

		go func() { _, _ = io.WriteString(conn, body[11:]) }()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		s := newSSE(resp)
		assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
		done := s.message(t)
		assert.Equal(t, `"late"`, subID(t, done, "result"))
		s.end(t)
		assert.ErrorIs(t, reasonOf(t, streamOf(t, src, "late")), listen.ErrRevoked)
		p.close(t)
		synctest.Wait()
	})
}
