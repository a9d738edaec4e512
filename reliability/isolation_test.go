package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// The isolation property, over many concurrent subscriptions with random
// filters on one hub.Hub: no stream ever receives a notification it did
// not ask for (by the accepted filter of its own acknowledgement), nor one
// tagged with another subscription's id, and every stream receives every
// event its filter selects, in publication order. Over HTTP every client
// uses the same JSON-RPC id 1; over stdio several connections each reuse the
// same ids, integers and strings alike (1 and "1" are different ids).

const (
	isoSecret  = "test://pool/secret" // refused by CanRead: never accepted
	isoNobody  = "test://nobody"      // in no filter
	isoRounds  = 3
	isoPerRnd  = 80 // below the hub's queue bound (100): nothing may drop
	isoHTTP    = 24 // HTTP clients, all with id 1
	isoConns   = 4  // stdio connections
	isoPerConn = 8  // listens per stdio connection
)

var isoPool = []string{"file:///a", "file:///b", "mem://c", "test://d", "https://e.example/x", isoSecret}

// isoCaps advertise everything but prompts.listChanged: promptsListChanged
// is never accepted.
func isoCaps() listen.Capabilities {
	return listen.Capabilities{
		ToolsListChanged:     true,
		ResourcesListChanged: true, ResourcesSubscribe: true,
	}
}

// isoRequest is a random requested filter and what the server must accept
// of it.
type isoRequest struct {
	filter map[string]any
	want   map[string]any
}

func randomRequest(r *rand.Rand) isoRequest {
	req := isoRequest{filter: map[string]any{}, want: map[string]any{}}
	for _, key := range []string{spec.KeyToolsListChanged, spec.KeyPromptsListChanged, spec.KeyResourcesListChanged} {
		switch r.IntN(3) {
		case 1:
			req.filter[key] = true
			if key != spec.KeyPromptsListChanged {
				req.want[key] = true
			}
		case 2:
			req.filter[key] = false
		}
	}
	if r.IntN(4) > 0 {
		var uris, kept []any
		for range r.IntN(5) {
			u := isoPool[r.IntN(len(isoPool))]
			uris = append(uris, u)
			if u != isoSecret {
				kept = append(kept, u)
			}
		}
		if uris == nil {
			uris = []any{}
		}
		if kept == nil {
			kept = []any{}
		}
		req.filter[spec.KeyResourceSubscriptions] = uris
		req.want[spec.KeyResourceSubscriptions] = kept
	}
	if r.IntN(4) == 0 {
		req.filter["x-unadvertised"] = []any{"a"} // no extension: narrowed away
	}
	return req
}

// isoStream is one subscription of the property test.
type isoStream struct {
	name     string // for messages
	id       string // its JSON-RPC id token
	req      isoRequest
	accepted map[string]any
	msgs     <-chan msg
	cs       *clientStream // HTTP only
}

// selects reports whether the stream's accepted filter selects ev.
func (s *isoStream) selects(ev isoEvent) bool {
	switch ev.kind {
	case listen.KindToolsListChanged:
		return s.accepted[spec.KeyToolsListChanged] == true
	case listen.KindPromptsListChanged:
		return s.accepted[spec.KeyPromptsListChanged] == true
	case listen.KindResourcesListChanged:
		return s.accepted[spec.KeyResourcesListChanged] == true
	case listen.KindResourceUpdated:
		uris, _ := s.accepted[spec.KeyResourceSubscriptions].([]any)
		return slices.Contains(uris, any(ev.uri))
	}
	return false
}

type isoEvent struct {
	seq  int
	kind listen.Kind
	uri  string
}

func (e isoEvent) method() string {
	switch e.kind {
	case listen.KindToolsListChanged:
		return spec.MethodToolsListChanged
	case listen.KindPromptsListChanged:
		return spec.MethodPromptsListChanged
	case listen.KindResourcesListChanged:
		return spec.MethodResourcesListChanged
	}
	return spec.MethodResourceUpdated
}

func TestIsolationRandomFilters(t *testing.T) {
	for _, mode := range []string{"http", "stdio", "both"} {
		for _, seed := range []uint64{1, 2, 3, 4, 5} {
			t.Run(fmt.Sprintf("%s/seed-%d", mode, seed), func(t *testing.T) {
				isolation(t, mode, seed)
			})
		}
	}
}

func isolation(t *testing.T, mode string, seed uint64) {
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	r := rand.New(rand.NewPCG(seed, 0x15014710))
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	opts := listen.Options{
		Capabilities: isoCaps(),
		CanRead:      func(_ context.Context, _ *listen.Request, uri string) bool { return uri != isoSecret },
	}
	var streams []*isoStream

	if mode != "stdio" {
		hh, err := streamhttp.New(listen.NewServer(h, opts), streamhttp.Options{
			KeepAlive:    failsafe,
			WriteTimeout: failsafe,
		})
		require.NoError(t, err)
		ts := httptest.NewServer(hh)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		defer func() {
			ts.CloseClientConnections()
			ts.Close()
			client.CloseIdleConnections()
		}()
		for i := range isoHTTP {
			req := randomRequest(r)
			cs := openHTTP(t, client, ts.URL, `1`, req.filter)
			defer func() {
				cs.cancel()
				<-cs.done
			}()
			streams = append(streams, &isoStream{name: fmt.Sprintf("http#%d", i), id: `1`, req: req, msgs: cs.msgs, cs: cs})
		}
	}
	if mode != "http" {
		ss, err := stdio.New(listen.NewServer(h, opts), stdio.Options{WriteTimeout: failsafe})
		require.NoError(t, err)
		ids := []string{`1`, `2`, `3`, `4`, `"1"`, `"2"`, `"3"`, `"4"`}
		for c := range isoConns {
			conn := newStdioConn(t, ss, c%2 == 1, connOptions{routeBuf: 4 * isoRounds * isoPerRnd})
			defer conn.shut(t)
			for _, id := range ids[:isoPerConn] {
				req := randomRequest(r)
				body, err := json.Marshal(req.filter)
				require.NoError(t, err)
				cs := conn.listen(t, id, string(body))
				streams = append(streams, &isoStream{name: fmt.Sprintf("stdio#%d/%s", c, id), id: id, req: req, msgs: cs.msgs})
			}
		}
	}

	// Every acknowledgement: its own id, and the narrowed filter.
	for _, s := range streams {
		m := recv(t, s.msgs, "the acknowledgement of "+s.name)
		requireAck(t, m, s.id)
		s.accepted = m.accepted()
		require.Equal(t, s.req.want, s.accepted, "%s: requested %v", s.name, s.req.filter)
	}
	require.Equal(t, len(streams), h.Stats().Subscriptions)

	kinds := []listen.Kind{listen.KindToolsListChanged, listen.KindPromptsListChanged, listen.KindResourcesListChanged,
		listen.KindResourceUpdated, listen.KindResourceUpdated, listen.KindResourceUpdated}
	uris := append(slices.Clone(isoPool), isoNobody)
	seq := 0
	total := 0
	for round := range isoRounds {
		var published []isoEvent
		for range isoPerRnd {
			ev := isoEvent{seq: seq, kind: kinds[r.IntN(len(kinds))]}
			seq++
			if ev.kind == listen.KindResourceUpdated {
				ev.uri = uris[r.IntN(len(uris))]
			}
			e := listen.Event{Kind: ev.kind, URI: ev.uri}.WithMetadata(map[string]any{"seq": ev.seq})
			rep, err := h.Publish(e)
			require.NoError(t, err)
			require.Zero(t, rep.Dropped, "round %d seq %d", round, ev.seq)
			published = append(published, ev)
		}
		// Each stream receives exactly what its filter selects, in order,
		// tagged with its own id; an extra or foreign notification shows
		// up as a mismatch here or in place of the completion.
		for _, s := range streams {
			for _, ev := range published {
				if !s.selects(ev) {
					continue
				}
				m := recv(t, s.msgs, fmt.Sprintf("seq %d on %s", ev.seq, s.name))
				total++
				requireNotification(t, m, s.id, ev.method())
				require.Equal(t, ev.seq, m.seq(), "%s: %s", s.name, m)
				if ev.kind == listen.KindResourceUpdated {
					require.Equal(t, ev.uri, m.uri(), "%s", s.name)
				}
			}
		}
	}
	shutdown := make(chan error, 1)
	go func() { shutdown <- h.Shutdown(context.Background()) }()
	for _, s := range streams {
		m := recv(t, s.msgs, "the completion of "+s.name)
		requireCompletion(t, m, s.id)
		if s.cs != nil {
			s.cs.end(t)
		}
	}
	require.NoError(t, <-shutdown)
	st := h.Stats()
	assert.Zero(t, st.Dropped, "dropped events")
	t.Logf("%d streams, %d events published, %d notifications checked", len(streams), seq, total)
}

// openHTTP opens a listen whose messages are read by a goroutine.
func openHTTP(t testing.TB, client *http.Client, url, id string, filter map[string]any) *clientStream {
	t.Helper()
	body, err := json.Marshal(filter)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cs := &clientStream{id: id, msgs: make(chan msg, 4*isoRounds*isoPerRnd), status: make(chan int, 1), cancel: cancel, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(listenBody(id, string(body))))
	require.NoError(t, err)
	req.Header = listenHeaders()
	go readHTTP(ctx, client, req, cs)
	return cs
}
