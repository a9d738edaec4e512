package listen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// Every kind has its name and the filter key that selects it; an invalid
// kind has neither.
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
		assert.Equal(t, tt.key, tt.kind.Key(), tt.name)
	}
}
