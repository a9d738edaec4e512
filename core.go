package listen

import (
	"encoding/json"

	"github.com/mcplisten/listen/internal/core"
)

// The module's other packages reach these through internal/core.
func init() {
	core.ParseParams = func(params json.RawMessage, req any) error {
		return parseParams(params, req.(*Request))
	}
	core.FilterValid = func(f map[string]any) bool { return Filter(f).valid() }
	core.FilterSubsetOf = func(f, supported map[string]any) bool {
		return Filter(f).subsetOf(supported)
	}
	core.FilterClone = func(f map[string]any) map[string]any { return Filter(f).clone() }
	core.FilterStrings = func(f map[string]any, key string) []string { return Filter(f).strings(key) }
	core.KindOf = func(key string) uint8 { return uint8(kindOf(key)) }
	core.CapabilitiesAllow = func(caps any, f map[string]any) bool {
		return caps.(Capabilities).allows(f)
	}
}
