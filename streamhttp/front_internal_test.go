package streamhttp

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
)

// A listen that Front routes by its body is served without what Front read
// of it: once its stream is open, neither the body (the request's Body,
// which a stream served inside net/http keeps with its request) nor the
// parsed message (FrontMessage's, which the stream's context would keep)
// is reachable. Before, every such stream kept both, twice its body, for
// its whole life.
func TestFrontListenKeepsNoBody(t *testing.T) {
	src := listentest.NewSource()
	inContext := make(chan bool, 1)
	src.BeforeOpen = func(ctx context.Context, _ *listen.Request) error {
		inContext <- ctx.Value(frontKey{}) != nil
		return nil
	}
	h, err := New(listen.NewServer(src, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}}), Options{NoTakeover: true, MaxBodyBytes: 4 << 20})
	require.NoError(t, err)
	var body weak.Pointer[byte]
	f := FrontWith(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fb, ok := r.Body.(*frontBody)
		if assert.True(t, ok, "the body Front read") {
			body = weak.Make(&fb.b[0])
		}
		h.ServeHTTP(w, r)
	}), nil, FrontOptions{MaxBodyBytes: 4 << 20})
	ts := httptest.NewServer(f)
	defer ts.Close()

	pad := strings.Repeat("x", 1900_000)
	msg := `{"jsonrpc":"2.0","id":"big","method":"subscriptions/listen","params":{"pad":"` + pad + `",` +
		`"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, err := http.Post(ts.URL, "application/json", strings.NewReader(msg)) // no Mcp-Method: routed by its body
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	for { // the acknowledgement: the stream is open
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		if line == "\n" {
			break
		}
	}
	assert.False(t, <-inContext, "the stream's context holds Front's parsed message")
	for i := 0; i < 10 && body.Value() != nil; i++ {
		runtime.GC()
	}
	assert.Nil(t, body.Value(), "the body Front read is still reachable")
	require.NoError(t, h.Shutdown(context.Background()))
}

// Front finds a listen in a batch without an allocation per member: a body
// of MaxBodyBytes holding tiny members costs a few allocations, not the
// half million (50 MB, a hundred times the body) of decoding the batch
// into json.RawMessages and parsing every member, as it did before.
func TestFrontBatchCostsNoAllocationPerMember(t *testing.T) {
	for _, member := range []string{`1`, `{}`, `{"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`} {
		n := defaultFrontMaxBodyBytes / (len(member) + 1)
		body := []byte("[" + strings.Repeat(member+",", n-1) + member + "]")
		m, err := jsonrpc.ParseMessage(body)
		parsed := err == nil
		require.False(t, parsed)
		allocs := testing.AllocsPerRun(3, func() {
			if oversizedID(body, core.DefaultMaxIDBytes) {
				t.Error("no id is too long")
			}
			if isListenBody(body, m, parsed, core.DefaultMaxIDBytes) {
				t.Error("not a listen")
			}
		})
		assert.LessOrEqual(t, allocs, 2.0, "a batch of %d members %s", n, member)
	}
}
