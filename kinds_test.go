package listen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
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
