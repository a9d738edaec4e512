package capcache_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/capcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const refresh = 10 * time.Millisecond

var (
	tools     = capcache.Reading{Caps: listen.Capabilities{ToolsListChanged: true}, JSON: []byte(`{"tools":{"listChanged":true}}`)}
	toolsRes  = capcache.Reading{Caps: listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true}}
	nothing   = capcache.Reading{JSON: []byte(`{}`)}
	askTools  = &listen.Request{Notifications: listen.Filter{"toolsListChanged": true}}
	askPrompt = &listen.Request{Notifications: listen.Filter{"promptsListChanged": true}}
)

// server is a server whose reading the test sets; reads counts the calls
// of Read.
type server struct {
	mu    sync.Mutex
	next  capcache.Reading
	err   error
	reads int
}

func (s *server) set(r capcache.Reading, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.err = r, err
}

func (s *server) read(context.Context) (capcache.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.next, s.err
}

func (s *server) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// When a listen reads the capabilities again: after a list change, and
// when it asks for a kind the last reading did not allow once that reading
// is older than the refresh interval; never for a kind it allows.
func TestWhenAListenReadsAgain(t *testing.T) {
	tests := []struct {
		name    string
		changed bool
		wait    time.Duration
		req     *listen.Request
		reads   int
	}{
		{name: "allowed kind", req: askTools, wait: time.Hour, reads: 0},
		{name: "allowed kind after a list change", changed: true, req: askTools, reads: 1},
		{name: "kind not allowed, reading fresh", req: askPrompt, wait: refresh / 2, reads: 0},
		{name: "kind not allowed, reading older than the interval", req: askPrompt, wait: refresh, reads: 1},
		{name: "kind not allowed after a list change", changed: true, req: askPrompt, reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &server{next: toolsRes}
				c := capcache.New(tools, capcache.Options{Read: srv.read, Refresh: refresh})
				if tt.changed {
					c.Changed()
				}
				time.Sleep(tt.wait)
				got, err := c.CapabilitiesFor(t.Context(), tt.req)
				require.NoError(t, err)
				assert.Equal(t, tt.reads, srv.calls())
				want := tools.Caps
				if tt.reads > 0 {
					want = toolsRes.Caps
				}
				assert.Equal(t, want, got)
				assert.Equal(t, uint64(1+tt.reads), c.Reads())

				// The next listen takes that reading as it is.
				_, err = c.CapabilitiesFor(t.Context(), askTools)
				require.NoError(t, err)
				assert.Equal(t, tt.reads, srv.calls())
			})
		})
	}
}

// Listens that find a reading under way wait for it and share it; one
// whose context ends first gives up with its cause.
func TestConcurrentListensShareOneReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var reads int
		c := capcache.New(tools, capcache.Options{Refresh: refresh, Read: func(context.Context) (capcache.Reading, error) {
			reads++ // under the Cache's token
			<-gate
			return toolsRes, nil
		}})
		time.Sleep(refresh) // the first reading is old: a kind it does not allow is read again
		results := make(chan listen.Capabilities, 4)
		for range 4 {
			go func() {
				got, err := c.CapabilitiesFor(context.Background(), askPrompt)
				assert.NoError(t, err)
				results <- got
			}()
		}
		synctest.Wait() // one reads, three wait for it
		ctx, cancel := context.WithCancelCause(context.Background())
		gone := errors.New("client gone")
		failed := make(chan error, 1)
		go func() {
			_, err := c.CapabilitiesFor(ctx, askPrompt)
			failed <- err
		}()
		synctest.Wait()
		cancel(gone)
		assert.ErrorIs(t, <-failed, gone)

		close(gate)
		for range 4 {
			assert.Equal(t, toolsRes.Caps, <-results)
		}
		assert.Equal(t, 1, reads)
	})
}

// A failed reading is the listen's error, and the next listen reads again.
func TestFailedReadingIsReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{next: toolsRes}
		c := capcache.New(tools, capcache.Options{Read: srv.read, Refresh: refresh})
		boom := errors.New("server/discover refused")
		srv.set(capcache.Reading{}, boom)
		c.Changed()
		_, err := c.CapabilitiesFor(t.Context(), askTools)
		require.ErrorIs(t, err, boom)

		srv.set(toolsRes, nil)
		got, err := c.CapabilitiesFor(t.Context(), askTools)
		require.NoError(t, err)
		assert.Equal(t, toolsRes.Caps, got)
		assert.Equal(t, 2, srv.calls())
	})
}

// The extensions are those of the first reading; the flags follow the
// server; Read reads now and keeps what it read.
func TestExtensionsAndRead(t *testing.T) {
	first := tools
	first.Caps.Extensions = map[string]any{"io.example/tasks": map[string]any{}}
	srv := &server{next: toolsRes}
	c := capcache.New(first, capcache.Options{Read: srv.read, Refresh: refresh})
	r, err := c.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, toolsRes, r)
	assert.Equal(t, toolsRes, c.Last())
	got, err := c.CapabilitiesFor(t.Context(), askTools)
	require.NoError(t, err)
	assert.Equal(t, listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true, Extensions: first.Caps.Extensions}, got)
}

// ListenOptions keeps base but for the server's info and the
// capabilities, which come from the Cache when a listen opens.
func TestListenOptions(t *testing.T) {
	c := capcache.New(tools, capcache.Options{Read: (&server{next: tools}).read, Refresh: refresh})
	info := listen.Implementation{Name: "srv", Version: "1"}
	base := listen.Options{Capabilities: listen.Capabilities{PromptsListChanged: true}, ServerInfo: listen.Implementation{Name: "base"}, MaxURIBytes: 7}
	o := c.ListenOptions(base, info)
	assert.Equal(t, info, o.ServerInfo)
	assert.Equal(t, listen.Capabilities{}, o.Capabilities)
	assert.Equal(t, 7, o.MaxURIBytes)
	require.NotNil(t, o.CapabilitiesFor)
	got, err := o.CapabilitiesFor(t.Context(), askTools)
	require.NoError(t, err)
	assert.Equal(t, tools.Caps, got)
}

// OnStore sees every reading kept with the one before it; OnEmpty is told
// of a reading that allows nothing once, until one allows something again.
func TestHooks(t *testing.T) {
	var (
		stored []string
		empty  int
	)
	name := func(r *capcache.Reading) string {
		switch {
		case r == nil:
			return "nil"
		case r.Empty():
			return "empty"
		}
		return "tools"
	}
	srv := &server{next: nothing}
	c := capcache.New(nothing, capcache.Options{
		Read:    srv.read,
		Refresh: refresh,
		OnStore: func(prev *capcache.Reading, next capcache.Reading) {
			stored = append(stored, name(prev)+">"+name(&next))
		},
		OnEmpty: func(capcache.Reading) { empty++ },
	})
	for _, r := range []capcache.Reading{nothing, tools, nothing} {
		srv.set(r, nil)
		_, err := c.Read(t.Context())
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"nil>empty", "empty>empty", "empty>tools", "tools>empty"}, stored)
	assert.Equal(t, 2, empty, "once at first, again after a reading allowed something")
}

// Parse reads a server/discover result's capabilities (as
// listen.CapabilitiesFrom does, and exactly as sent), versions and server
// info.
func TestParse(t *testing.T) {
	tests := []struct {
		name, result string
		want         capcache.Discovered
		err          string
	}{
		{
			name:   "full",
			result: `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{"listChanged":true}}}`,
			want: capcache.Discovered{
				Reading:    capcache.Reading{Caps: listen.Capabilities{ToolsListChanged: true}, JSON: []byte(`{"tools":{"listChanged":true}}`)},
				Versions:   []string{"2026-07-28", "2025-11-25"},
				ServerInfo: listen.Implementation{Name: "s", Version: "1"},
			},
		},
		{
			name:   "no server info",
			result: `{"supportedVersions":["2026-07-28"],"capabilities":{}}`,
			want:   capcache.Discovered{Reading: capcache.Reading{JSON: []byte(`{}`)}, Versions: []string{"2026-07-28"}},
		},
		{name: "no capabilities", result: `{"supportedVersions":["2026-07-28"]}`, err: "capabilities must be a JSON object"},
		{name: "not JSON", result: `{`, err: "decoding the result"},
		{name: "capabilities not an object", result: `{"capabilities":[1]}`, err: "capabilities must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := capcache.Parse([]byte(tt.result))
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

type noQuota struct{}

func (noQuota) Acquire(context.Context, *listen.Request) (func(), error) { return func() {}, nil }

// TestListenOptionsKeepsFields: the listen.Options an adapter serves with
// are the user's, field for field, but for the three it reads from its
// SDK's server (Capabilities, CapabilitiesFor, ServerInfo); the adapters'
// documentation of Options.Listen lists the others. A field added to
// listen.Options fails here until it is set below (and documented there).
func TestListenOptionsKeepsFields(t *testing.T) {
	overwritten := map[string]bool{"Capabilities": true, "CapabilitiesFor": true, "ServerInfo": true}
	var base listen.Options
	called := ""
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if overwritten[name] {
			continue
		}
		switch f.Kind() {
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func(in []reflect.Value) []reflect.Value {
				called = name
				out := make([]reflect.Value, f.Type().NumOut())
				for j := range out {
					out[j] = reflect.Zero(f.Type().Out(j))
				}
				return out
			}))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(7 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Interface:
			if f.Type() != reflect.TypeFor[listen.Quota]() {
				t.Fatalf("listen.Options.%s: set it in this test", name)
			}
			f.Set(reflect.ValueOf(listen.Quota(noQuota{})))
		default:
			t.Fatalf("listen.Options.%s: set it in this test", name)
		}
	}
	c := capcache.New(tools, capcache.Options{Read: func(context.Context) (capcache.Reading, error) { return tools, nil }, Refresh: refresh})
	got := reflect.ValueOf(c.ListenOptions(base, listen.Implementation{Name: "s", Version: "1"}))
	var kept []string
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if overwritten[name] {
			continue
		}
		g := got.Field(i)
		if g.Kind() == reflect.Func {
			args := make([]reflect.Value, g.Type().NumIn())
			for j := range args {
				args[j] = reflect.Zero(g.Type().In(j))
			}
			called = ""
			g.Call(args)
			assert.Equal(t, name, called, "%s kept", name)
		} else {
			assert.Equal(t, v.Field(i).Interface(), g.Interface(), "%s kept", name)
		}
		kept = append(kept, name)
	}
	assert.Equal(t, []string{"Extensions", "CanRead", "MaxURIBytes", "MaxFilterBytes", "MaxIDBytes", "MaxSettingsBytes", "MaxURISegments",
		"SubResources", "Scopes", "MaxLifetime", "LifetimeJitter", "Access", "Disabled", "EndWithError", "ReleaseTimeout",
		"MaxStreams", "MaxStreamsPerKey", "StreamKey", "Quota", "RetryAfter", "DrainWindow", "RetryHint", "SupportedVersions",
		"Logger", "OnOpen", "OnClose", "OnRefuse"}, kept,
		"the fields adapter.Options.Listen documents as used as given")
	o := got.Interface().(listen.Options)
	assert.Equal(t, listen.Implementation{Name: "s", Version: "1"}, o.ServerInfo)
	assert.NotNil(t, o.CapabilitiesFor)
}
