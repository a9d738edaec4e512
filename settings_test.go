package listen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// settingsExt records what its shaper reads of the client's settings, and
// tries to change what it was given.
type settingsExt struct {
	got []listen.Filter
}

func (*settingsExt) ID() string                   { return "com.example/watch" }
func (*settingsExt) SupportsProtocol(string) bool { return true }
func (*settingsExt) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if v, ok := requested["watch"]; ok {
		return listen.Filter{"watch": v}, nil
	}
	return nil, nil
}
func (e *settingsExt) ShapeSubscriptionEvent(_ listen.Event, _ listen.Filter, settings listen.Settings) (string, map[string]any, error) {
	if e.got == nil {
		return "notifications/com.example/watch", map[string]any{}, nil // counting allocations
	}
	e.got = append(e.got, listen.SettingsClone(settings))
	listen.SettingsClone(settings)["mode"] = "scribbled" // the shaper's own copy
	if v, ok := settings.Value("paths"); ok {
		v.([]any)[0] = "scribbled"
	}
	return "notifications/com.example/watch", map[string]any{}, nil
}

// openWithSettings opens a listen of ext whose client declared settings
// (a JSON object) for it.
func openWithSettings(t testing.TB, ext *settingsExt, settings string, opts listen.Options) (*listen.Subscription, *listen.Request, error) {
	t.Helper()
	reg, err := listen.NewExtensionRegistry(ext)
	require.NoError(t, err)
	opts.Capabilities = allCaps
	opts.Capabilities.Extensions = map[string]any{ext.ID(): map[string]any{}}
	opts.Extensions = reg
	var decl map[string]any
	require.NoError(t, json.Unmarshal([]byte(settings), &decl))
	req := request(jsonrpc.IntID(1), listen.Filter{"watch": true})
	req.ClientCapabilities = map[string]any{"extensions": map[string]any{ext.ID(): decl}}
	sub, err := listen.Open(context.Background(), newTestSource(), req, &opts)
	return sub, req, err
}

// Extension shapers see the settings the client negotiated, as they were
// at open, and cannot change them: what they read is theirs.
func TestShaperSeesTheClientsSettings(t *testing.T) {
	ext := &settingsExt{got: []listen.Filter{}}
	sub, req, err := openWithSettings(t, ext, `{"mode":"full","paths":["a","b"]}`, listen.Options{})
	require.NoError(t, err)
	defer sub.Close(nil)
	req.ClientCapabilities["extensions"].(map[string]any)[ext.ID()].(map[string]any)["mode"] = "changed after open"

	ev := listen.ExtensionEvent(ext.ID(), listen.Filter{"watch": true}, nil)
	for range 2 {
		_, err := sub.Notification(ev)
		require.NoError(t, err)
	}
	require.Len(t, ext.got, 2)
	want := listen.Filter{"mode": "full", "paths": []any{"a", "b"}}
	assert.Equal(t, want, ext.got[0], "what the client declared at open")
	assert.Equal(t, want, ext.got[1], "what the first shaper changed was its own copy")
}

// Shaping an extension event copies nothing of the settings: it allocates
// as much with 1,000 members of settings as with none.
func TestExtensionEventDoesNotCopySettings(t *testing.T) {
	var members []string
	for i := range 1000 {
		members = append(members, fmt.Sprintf(`"k%d":"v"`, i))
	}
	ev := listen.ExtensionEvent("com.example/watch", listen.Filter{"watch": true}, nil)
	allocs := func(settings string) float64 {
		sub, _, err := openWithSettings(t, &settingsExt{}, settings, listen.Options{})
		require.NoError(t, err)
		defer sub.Close(nil)
		return testing.AllocsPerRun(20, func() {
			_, err := sub.Notification(ev)
			require.NoError(t, err)
		})
	}
	none := allocs(`{}`)
	assert.Equal(t, none, allocs("{"+strings.Join(members, ",")+"}"), "allocations per event with 1,000 members of settings and with none")
}

// The settings of the extensions a listen negotiates count toward
// MaxSettingsBytes (16 KiB by default), as compact JSON: over it the
// listen is refused with -32602 and the exact message, before the Source
// is opened.
func TestSettingsBound(t *testing.T) {
	// {"p":"xx...x"} is len(pad)+8 bytes of compact JSON.
	settingsOf := func(size int) string { return `{"p":"` + strings.Repeat("x", size-8) + `"}` }
	tests := []struct {
		name  string
		max   int
		size  int
		msg   string
		opens bool
	}{
		{name: "default, at the bound", size: 16 << 10, opens: true},
		{name: "default, over it", size: 16<<10 + 1, msg: "subscriptions/listen extension settings must be at most 16384 bytes"},
		{name: "set, at the bound", max: 100, size: 100, opens: true},
		{name: "set, over it", max: 100, size: 101, msg: "subscriptions/listen extension settings must be at most 100 bytes"},
		{name: "far over it", size: 240 << 10, msg: "subscriptions/listen extension settings must be at most 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, _, err := openWithSettings(t, &settingsExt{}, settingsOf(tt.size), listen.Options{MaxSettingsBytes: tt.max})
			if tt.opens {
				require.NoError(t, err)
				sub.Close(nil)
				return
			}
			require.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams})
			assert.Equal(t, tt.msg, err.(*jsonrpc.Error).Message)
		})
	}
}

// Settings of an extension the listen does not use are not kept, so they
// do not count.
func TestSettingsOfUnusedExtensionsDoNotCount(t *testing.T) {
	ext := &settingsExt{}
	reg, err := listen.NewExtensionRegistry(ext)
	require.NoError(t, err)
	caps := allCaps
	caps.Extensions = map[string]any{ext.ID(): map[string]any{}}
	req := request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	req.ClientCapabilities = map[string]any{"extensions": map[string]any{
		"com.example/other": map[string]any{"p": strings.Repeat("x", 20<<10)},
	}}
	sub, err := listen.Open(context.Background(), newTestSource(), req, &listen.Options{Capabilities: caps, Extensions: reg})
	require.NoError(t, err)
	sub.Close(nil)
}

// viewExt keeps the Settings its shaper was given.
type viewExt struct {
	settingsExt
	seen listen.Settings
}

func (e *viewExt) ShapeSubscriptionEvent(_ listen.Event, _ listen.Filter, s listen.Settings) (string, map[string]any, error) {
	e.seen = s
	return "notifications/com.example/watch", map[string]any{}, nil
}

// Settings reads members without copying scalars, and copies objects and
// lists; nothing it returns changes what the subscription keeps.
func TestSettingsView(t *testing.T) {
	var zero listen.Settings
	_, ok := zero.Value("any")
	assert.False(t, ok)
	assert.Nil(t, listen.SettingsClone(zero))
	b, err := listen.SettingsJSON(zero)
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(b))

	ext := &viewExt{}
	reg, err := listen.NewExtensionRegistry(ext)
	require.NoError(t, err)
	caps := allCaps
	caps.Extensions = map[string]any{ext.ID(): map[string]any{}}
	req := request(jsonrpc.IntID(1), listen.Filter{"watch": true})
	req.ClientCapabilities = map[string]any{"extensions": map[string]any{ext.ID(): map[string]any{
		"on": true, "off": false, "name": "n", "n": json.Number("2"), "obj": map[string]any{"a": []any{json.Number("1")}},
	}}}
	sub, err := listen.Open(context.Background(), newTestSource(), req, &listen.Options{Capabilities: caps, Extensions: reg})
	require.NoError(t, err)
	defer sub.Close(nil)
	_, err = sub.Notification(listen.ExtensionEvent(ext.ID(), listen.Filter{"watch": true}, nil))
	require.NoError(t, err)
	got := ext.seen

	assert.Len(t, listen.SettingsClone(got), 5)
	for key, want := range map[string]any{"on": true, "off": false, "name": "n"} {
		v, ok := got.Value(key)
		assert.True(t, ok, key)
		assert.Equal(t, want, v, key)
	}
	n, ok := got.Value("n")
	assert.True(t, ok)
	assert.Equal(t, json.Number("2"), n)
	_, ok = got.Value("missing")
	assert.False(t, ok)
	obj, _ := got.Value("obj")
	obj.(map[string]any)["a"].([]any)[0] = "changed"
	again, _ := got.Value("obj")
	assert.Equal(t, map[string]any{"a": []any{json.Number("1")}}, again, "Value returns a copy")
	c := listen.SettingsClone(got)
	c["on"] = false
	on, _ := got.Value("on")
	assert.Equal(t, true, on, "Clone returns a copy")
	b, err = listen.SettingsJSON(got)
	require.NoError(t, err)
	assert.Equal(t, `{"n":2,"name":"n","obj":{"a":[1]},"off":false,"on":true}`, string(b))
}
