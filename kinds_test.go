package listen_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// Every kind has its name, and the filter key that selects it says which
// kind it is; an invalid kind has no name, an extension's key no kind.
func TestKinds(t *testing.T) {
	for _, tt := range []struct {
		kind      listen.Kind
		name, key string
	}{
		{listen.KindToolsListChanged, "tools_list_changed", spec.KeyToolsListChanged},
		{listen.KindPromptsListChanged, "prompts_list_changed", spec.KeyPromptsListChanged},
		{listen.KindResourcesListChanged, "resources_list_changed", spec.KeyResourcesListChanged},
		{listen.KindResourceUpdated, "resource_updated", spec.KeyResourceSubscriptions},
		{listen.KindExtension, "extension", ""},
		{0, "invalid", ""},
		{200, "invalid", ""},
	} {
		assert.Equal(t, tt.name, tt.kind.String())
		if tt.key != "" {
			assert.Equal(t, tt.kind, listen.KindOf(tt.key), tt.key)
		}
	}
	assert.Zero(t, listen.KindOf("taskIds"))
	assert.Zero(t, listen.KindOf(""))
}

// Capabilities.Allows is true exactly when narrowing against the
// capabilities (Open) keeps every core kind the filter asks for, for each
// combination of the four flags.
func TestCapabilitiesAllows(t *testing.T) {
	filters := []listen.Filter{
		{},
		{"taskIds": []any{"t"}},
		{spec.KeyToolsListChanged: true},
		{spec.KeyToolsListChanged: false},
		{spec.KeyPromptsListChanged: true, spec.KeyResourcesListChanged: true},
		{spec.KeyResourceSubscriptions: []any{"file:///a"}},
		{spec.KeyResourceSubscriptions: []any{}},
		{spec.KeyToolsListChanged: true, spec.KeyPromptsListChanged: true,
			spec.KeyResourcesListChanged: true, spec.KeyResourceSubscriptions: []any{"file:///a"}},
	}
	for bits := range 16 {
		caps := listen.Capabilities{
			ToolsListChanged:     bits&1 != 0,
			PromptsListChanged:   bits&2 != 0,
			ResourcesListChanged: bits&4 != 0,
			ResourcesSubscribe:   bits&8 != 0,
		}
		for i, f := range filters {
			sub, err := listen.Open(context.Background(), listentest.NewSource(),
				request(jsonrpc.IntID(int64(i)), f), &listen.Options{Capabilities: caps})
			require.NoError(t, err)
			kept := true
			for k, v := range f {
				if listen.KindOf(k) == 0 || v == false {
					continue
				}
				if _, ok := sub.Accepted()[k]; !ok {
					kept = false
				}
			}
			sub.Close(listen.ErrComplete)
			assert.Equal(t, kept, listen.Allows(caps, f), "%+v %v", caps, f)
		}
	}
}
