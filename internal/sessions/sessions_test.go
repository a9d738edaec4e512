package sessions_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/sessions"
	"github.com/mcplisten/listen/streamhttp"
)

// fakeSDK stands for an SDK's stateful handler: an initialize gets a new
// session id; a request naming an id it ended is answered 404; a GET holds
// its stream until its request ends; DELETE ends the session.
type fakeSDK struct {
	mu      sync.Mutex
	n       int
	ended   map[string]bool
	noID    bool          // answer initialize 400 without an id
	getIn   chan struct{} // a GET reached the handler
	reached int           // requests that reached the handler
}

func newFakeSDK() *fakeSDK {
	return &fakeSDK{ended: map[string]bool{}, getIn: make(chan struct{}, 16)}
}

func (f *fakeSDK) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reached++
	id := r.Header.Get(sessions.HeaderSessionID)
	if id == "" && r.Method != http.MethodGet {
		f.n++
		n, noID := f.n, f.noID
		f.mu.Unlock()
		if noID {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		w.Header().Set(sessions.HeaderSessionID, "s"+strconv.Itoa(n))
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		return
	}
	ended := f.ended[id]
	if r.Method == http.MethodDelete {
		f.ended[id] = true
	}
	f.mu.Unlock()
	switch {
	case ended:
		http.Error(w, "gone", http.StatusNotFound)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		f.getIn <- struct{}{}
		<-r.Context().Done()
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (f *fakeSDK) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended[id] = true
}

func (f *fakeSDK) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reached
}

const initBody = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// sessionsFront is s behind the front (which parses the bodies), without
// the Origin check.
func sessionsFront(s *sessions.Sessions) http.Handler {
	return streamhttp.FrontWith(http.NotFoundHandler(), s, streamhttp.FrontOptions{Unchecked: true})
}

// call serves one request from addr (RemoteAddr), naming session id if
// not empty, and returns the recorder.
func call(h http.Handler, method, addr, id, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
	r.RemoteAddr = addr
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if id != "" {
		r.Header.Set(sessions.HeaderSessionID, id)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// open initializes from addr and returns the session id, or "" and the
// recorder when refused.
func open(t *testing.T, h http.Handler, addr string) (string, *httptest.ResponseRecorder) {
	t.Helper()
	w := call(h, http.MethodPost, addr, "", initBody)
	return w.Header().Get(sessions.HeaderSessionID), w
}

const (
	busySessions   = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Server busy: too many sessions"}}`
	clientSessions = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Too many sessions open for this client"}}`
)

// Sessions bound the sessions in total and per client: a flood from one
// client takes its share only; a refusal is 429 (the client's share) or
// 503 (every slot) with Retry-After and the exact error, and never reaches
// the SDK; a DELETE frees the slot at once.
func TestSessionsBounds(t *testing.T) {
	sdk := newFakeSDK()
	s := sessions.New(sdk, sessions.Options{Max: 3, MaxPerClient: 2})
	defer s.Close()
	h := sessionsFront(s)

	a1, _ := open(t, h, "10.0.0.1:1000")
	a2, _ := open(t, h, "10.0.0.1:1001") // another port: the same client
	require.NotEmpty(t, a1)
	require.NotEmpty(t, a2)
	before := sdk.count()
	id, w := open(t, h, "10.0.0.1:1002")
	assert.Empty(t, id)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Equal(t, clientSessions, w.Body.String())
	assert.Equal(t, before, sdk.count(), "a refused initialize never reaches the SDK")

	b1, _ := open(t, h, "10.0.0.2:1000")
	require.NotEmpty(t, b1, "another client has room while the first is at its share")
	_, w = open(t, h, "10.0.0.3:1000")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "Max counts every client")
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Equal(t, busySessions, w.Body.String())

	d := call(h, http.MethodDelete, "10.0.0.1:1000", a1, "")
	require.Equal(t, http.StatusNoContent, d.Code)
	c1, _ := open(t, h, "10.0.0.3:1000")
	assert.NotEmpty(t, c1, "a deleted session's slot is free at once")
	assert.Equal(t, http.StatusNotFound, call(h, http.MethodPost, "10.0.0.1:1000", a1, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Code)

	st := s.Stats()
	assert.Equal(t, 3, st.Open)
	assert.Equal(t, uint64(2), st.Refused)
	assert.Equal(t, uint64(1), st.NotFound)
}

// Only a POST that may open a session counts: a request of another method
// without a session id passes, and an initialize whose answer issues no id
// gives its slot back.
func TestSessionsOpeners(t *testing.T) {
	sdk := newFakeSDK()
	s := sessions.New(sdk, sessions.Options{Max: 1})
	defer s.Close()
	h := sessionsFront(s)

	sdk.noID = true
	_, w := open(t, h, "10.0.0.1:1")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	sdk.noID = false
	id, _ := open(t, h, "10.0.0.1:1")
	require.NotEmpty(t, id, "a failed initialize gave its slot back")
	w = call(h, http.MethodPost, "10.0.0.1:1", "", `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, w.Code, "a ping without a session id is not an opener")
	w = call(h, http.MethodPost, "10.0.0.1:1", "", `[`+initBody+`]`)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a body the front cannot parse (a batch) may open one")
}

// A request naming a session that was never issued, or that the SDK ended
// on its own, is answered 404 in plain text and never reaches the SDK; the
// SDK's own 404 frees the slot.
func TestSessionsUnknown(t *testing.T) {
	sdk := newFakeSDK()
	s := sessions.New(sdk, sessions.Options{Max: 1})
	defer s.Close()
	h := sessionsFront(s)

	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		body := ""
		if m == http.MethodPost {
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		}
		w := call(h, m, "10.0.0.1:1", "made-up", body)
		assert.Equal(t, http.StatusNotFound, w.Code, m)
		assert.Equal(t, sessions.MsgSessionNotFound+"\n", w.Body.String(), m)
	}
	assert.Zero(t, sdk.count())

	id, _ := open(t, h, "10.0.0.1:1")
	sdk.end(id)
	assert.Equal(t, http.StatusNotFound, call(h, http.MethodPost, "10.0.0.1:1", id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Code)
	id2, _ := open(t, h, "10.0.0.1:1")
	assert.NotEmpty(t, id2, "the SDK's 404 freed the slot")
	assert.Equal(t, uint64(3), s.Stats().NotFound)
}

// GET streams are bounded in total and per client, and a stream's end
// frees its slot.
func TestSessionsGetStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sdk := newFakeSDK()
		s := sessions.New(sdk, sessions.Options{MaxGetStreams: 2, MaxPerClient: 1})
		defer s.Close()
		h := sessionsFront(s)
		a, _ := open(t, h, "10.0.0.1:1")
		b, _ := open(t, h, "10.0.0.2:1")
		c, _ := open(t, h, "10.0.0.3:1")

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		get := func(id, addr string) {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/mcp", nil)
			r.RemoteAddr = addr
			if id != "" {
				r.Header.Set(sessions.HeaderSessionID, id)
			}
			wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), r) })
			<-sdk.getIn
		}
		get(a, "10.0.0.1:1")
		get(b, "10.0.0.2:1")
		assert.Equal(t, 2, s.Stats().GetStreams)

		w := call(h, http.MethodGet, "10.0.0.3:1", c, "")
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32603,"message":"`+sessions.MsgTooManyGetStreams+`"}}`, w.Body.String())
		cancel()
		wg.Wait()
		assert.Zero(t, s.Stats().GetStreams)

		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		get(c, "10.0.0.3:1")
		w = call(h, http.MethodGet, "10.0.0.3:2", c, "")
		assert.Equal(t, http.StatusTooManyRequests, w.Code, "one GET stream per client (MaxPerClient 1)")
		assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32603,"message":"`+sessions.MsgTooManyClientGetStreams+`"}}`, w.Body.String())
		w = call(h, http.MethodGet, "10.0.0.3:3", "", "")
		assert.Equal(t, http.StatusTooManyRequests, w.Code, "a GET without a session id counts too")
		cancel()
		wg.Wait()

		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		get("", "10.0.0.3:1")
		assert.Equal(t, 1, s.Stats().GetStreams)
		cancel()
		wg.Wait()
		assert.Zero(t, s.Stats().GetStreams)
		assert.Equal(t, uint64(3), s.Stats().RefusedGet)
	})
}

// A session no request used for IdleTimeout expires: its slot is free,
// requests naming it get 404, and End is told once; a request in progress
// (an open GET stream) keeps it.
func TestSessionsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sdk := newFakeSDK()
		var mu sync.Mutex
		var ended []string
		s := sessions.New(sdk, sessions.Options{Max: 2, IdleTimeout: time.Minute, End: func(ids []string) {
			mu.Lock()
			defer mu.Unlock()
			ended = append(ended, ids...)
		}})
		defer s.Close()
		h := sessionsFront(s)
		endedNow := func() []string {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), ended...)
		}
		a, _ := open(t, h, "10.0.0.1:1")
		b, _ := open(t, h, "10.0.0.1:1")
		time.Sleep(50 * time.Second)
		ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		require.Equal(t, http.StatusOK, call(h, http.MethodPost, "10.0.0.1:1", a, ping).Code)

		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/mcp", nil)
		r.RemoteAddr = "10.0.0.1:1"
		r.Header.Set(sessions.HeaderSessionID, b)
		done := make(chan struct{})
		go func() { h.ServeHTTP(httptest.NewRecorder(), r); close(done) }()
		<-sdk.getIn

		time.Sleep(30 * time.Second)
		assert.Empty(t, endedNow(), "a was used 30 s ago, b's stream is open")
		time.Sleep(31 * time.Second)
		assert.Equal(t, []string{a}, endedNow())
		assert.Equal(t, http.StatusNotFound, call(h, http.MethodPost, "10.0.0.1:1", a, ping).Code)
		c, _ := open(t, h, "10.0.0.1:1")
		assert.NotEmpty(t, c, "the expired session's slot is free")

		time.Sleep(10 * time.Minute)
		assert.Equal(t, []string{a, c}, endedNow(), "b's stream is still open")
		cancel()
		<-done
		time.Sleep(time.Minute)
		assert.Equal(t, []string{a, c, b}, endedNow())
		st := s.Stats()
		assert.Equal(t, uint64(3), st.Expired)
		assert.Zero(t, st.Open)
	})
}

// A slot of a session that expired is free at the next initialize even
// before the timer has run (a busy process).
func TestSessionsExpireOnAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sessions.New(newFakeSDK(), sessions.Options{Max: 1, IdleTimeout: time.Second, End: func([]string) {}})
		defer s.Close()
		h := sessionsFront(s)
		a, _ := open(t, h, "10.0.0.1:1")
		require.NotEmpty(t, a)
		time.Sleep(time.Second) // the timer fires now too; either frees it
		b, _ := open(t, h, "10.0.0.1:1")
		assert.NotEmpty(t, b)
	})
}

// ClientAddr keys a client by its IP address: no port, IPv4-mapped
// addresses as IPv4, IPv6 by its /64.
func TestClientAddr(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"10.1.2.3:5555", "10.1.2.3"},
		{"[::ffff:10.1.2.3]:1", "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:1", "2001:db8:1:2::/64"},
		{"[::1]:80", "::/64"},
		{"@unix", "@unix"},
		{"name:1", "name"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		assert.Equal(t, tc.want, sessions.ClientAddr(r), tc.remote)
	}
}

// A panicking End takes nothing down: the sessions stay expired, and
// later expiries still call it.
func TestSessionsEndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		s := sessions.New(newFakeSDK(), sessions.Options{IdleTimeout: time.Second, End: func([]string) {
			calls++
			panic("end")
		}})
		defer s.Close()
		h := sessionsFront(s)
		a, _ := open(t, h, "10.0.0.1:1")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, http.StatusNotFound, call(h, http.MethodGet, "10.0.0.1:1", a, "").Code)
		open(t, h, "10.0.0.1:1")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, calls)
		assert.Equal(t, uint64(2), s.Stats().Expired)
	})
}

// FuzzSessions plays a sequence of initializes, requests, DELETEs and
// sessions the SDK ended on its own against a model: the count of open
// sessions, per client and in all, is always exact, and an initialize is
// refused exactly when a bound is reached.
func FuzzSessions(f *testing.F) {
	f.Add([]byte{0, 0, 0, 8, 8, 1, 0, 16, 2, 3, 4, 0})
	f.Add([]byte{0, 8, 16, 24, 0, 8, 1, 9, 17, 3, 11, 0, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		sdk := newFakeSDK()
		const maxAll, perClient = 4, 2
		s := sessions.New(sdk, sessions.Options{Max: maxAll, MaxPerClient: perClient, IdleTimeout: -1})
		defer s.Close()
		h := sessionsFront(s)
		type live struct{ id, addr string }
		var model []live
		count := func(addr string) (n int) {
			for _, l := range model {
				if l.addr == addr {
					n++
				}
			}
			return n
		}
		ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		for _, op := range ops {
			addr := "10.0.0." + strconv.Itoa(int(op>>3)%3) + ":1"
			pick := -1
			if len(model) > 0 {
				pick = int(op>>3) % len(model)
			}
			switch op % 5 {
			case 0:
				full := len(model) >= maxAll || count(addr) >= perClient
				id, w := open(t, h, addr)
				if full {
					require.Empty(t, id)
					require.Contains(t, []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}, w.Code)
				} else {
					require.NotEmpty(t, id)
					model = append(model, live{id, addr})
				}
			case 1, 3:
				if pick < 0 {
					continue
				}
				if op%5 == 3 {
					sdk.end(model[pick].id)
					require.Equal(t, http.StatusNotFound, call(h, http.MethodPost, addr, model[pick].id, ping).Code)
				} else {
					require.Equal(t, http.StatusNoContent, call(h, http.MethodDelete, addr, model[pick].id, "").Code)
				}
				model = append(model[:pick], model[pick+1:]...)
			case 2:
				if pick >= 0 {
					require.Equal(t, http.StatusOK, call(h, http.MethodPost, addr, model[pick].id, ping).Code)
				}
			case 4:
				require.Equal(t, http.StatusNotFound, call(h, http.MethodPost, addr, "made-up", ping).Code)
			}
			require.Equal(t, len(model), s.Stats().Open)
		}
	})
}
