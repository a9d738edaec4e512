package listen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcplisten/listen/spec"
)

// Kind is the kind of an Event.
type Kind uint8

// Event kinds. The zero Kind is not a valid event.
const (
	// KindToolsListChanged becomes notifications/tools/list_changed.
	KindToolsListChanged Kind = iota + 1
	// KindPromptsListChanged becomes notifications/prompts/list_changed.
	KindPromptsListChanged
	// KindResourcesListChanged becomes notifications/resources/list_changed.
	KindResourcesListChanged
	// KindResourceUpdated becomes notifications/resources/updated.
	KindResourceUpdated
	// KindExtension is shaped by the extension named in Event.ExtensionID.
	KindExtension
)

// kinds is the table of notification kinds: all the packages know of a
// core kind is in its row (validation, narrowing, selection, the hub's
// index, shaping, the methods an extension may not use, the capability
// that allows it). A new core kind is a Kind above, a row here, its field in
// Capabilities below, and its method and filter key in package spec.
var kinds = [...]kindRow{
	KindToolsListChanged: {
		name: "tools_list_changed", method: spec.MethodToolsListChanged, key: spec.KeyToolsListChanged,
		capability: [2]string{"tools", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.ToolsListChanged },
	},
	KindPromptsListChanged: {
		name: "prompts_list_changed", method: spec.MethodPromptsListChanged, key: spec.KeyPromptsListChanged,
		capability: [2]string{"prompts", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.PromptsListChanged },
	},
	KindResourcesListChanged: {
		name: "resources_list_changed", method: spec.MethodResourcesListChanged, key: spec.KeyResourcesListChanged,
		capability: [2]string{"resources", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.ResourcesListChanged },
	},
	KindResourceUpdated: {
		name: "resource_updated", method: spec.MethodResourceUpdated, key: spec.KeyResourceSubscriptions, uri: true,
		capability: [2]string{"resources", "subscribe"}, allowed: func(c *Capabilities) *bool { return &c.ResourcesSubscribe },
	},
	KindExtension: {name: "extension"},
}

// A Subscription keeps a bit per kind in a uint64 (Subscription.lists).
var _ [64 - len(kinds)]struct{}

// kindRow is one row of kinds.
type kindRow struct {
	name   string // Kind.String
	method string // the notification's method
	// key is the filter key that selects the kind: a boolean for a list
	// change; for a resource update (uri), the list of URIs its URI must
	// be in.
	key string
	uri bool
	// capability is the server/discover capability that allows the kind,
	// capabilities.<group>.<flag>; allowed is its field in Capabilities.
	capability [2]string
	allowed    func(*Capabilities) *bool
}

// core reports whether k is a core kind (a row with a method).
func (k Kind) core() bool { return int(k) < len(kinds) && kinds[k].method != "" }

// listChange reports whether k is a core list change, selected when its key
// is true.
func (k Kind) listChange() bool { return k.core() && !kinds[k].uri }

// String returns the kind's name, such as "tools_list_changed".
func (k Kind) String() string {
	if int(k) < len(kinds) && kinds[k].name != "" {
		return kinds[k].name
	}
	return "invalid"
}

// KindOf returns the core kind that the filter key selects:
// KindToolsListChanged for toolsListChanged (a list change is selected when
// its key is true), and so on, KindResourceUpdated for
// resourceSubscriptions, and 0 for any other key (an extension's). A source
// that selects events itself, as the hub does, indexes its listeners by it.
func KindOf(key string) Kind {
	for k := range kinds {
		if Kind(k).core() && kinds[k].key == key {
			return Kind(k)
		}
	}
	return 0
}

// Capabilities is what a server advertises in server/discover, as far as a
// listen is concerned. The requested filter is narrowed against it: a
// requested list change needs its flag, resourceSubscriptions needs
// ResourcesSubscribe, and an extension's filter keys need the extension in
// Extensions. The zero value supports nothing: every listen is acknowledged
// with an empty filter.
//
// Build it with the fields, or read it from the capabilities object a server
// already advertises with CapabilitiesFrom.
type Capabilities struct {
	// ToolsListChanged is capabilities.tools.listChanged.
	ToolsListChanged bool
	// PromptsListChanged is capabilities.prompts.listChanged.
	PromptsListChanged bool
	// ResourcesListChanged is capabilities.resources.listChanged.
	ResourcesListChanged bool
	// ResourcesSubscribe is capabilities.resources.subscribe.
	ResourcesSubscribe bool
	// Extensions holds the settings of each extension advertised under
	// capabilities.extensions, keyed by extension id.
	Extensions map[string]any
}

// CapabilitiesFrom reads Capabilities from a server/discover capabilities
// object: v is its JSON text ([]byte, json.RawMessage or string) or any value
// that encodes as it, such as a go-sdk *mcp.ServerCapabilities or a
// map[string]any. Only the boolean true counts for a flag. A nil v (or JSON
// null) gives the zero Capabilities; anything that is not a JSON object is
// an error.
func CapabilitiesFrom(v any) (Capabilities, error) {
	var raw []byte
	switch t := v.(type) {
	case []byte:
		raw = t
	case json.RawMessage:
		raw = t
	case string:
		raw = []byte(t)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return Capabilities{}, fmt.Errorf("listen: encoding capabilities: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return Capabilities{}, nil
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || raw[0] != '{' || dec.Decode(&obj) != nil {
		return Capabilities{}, errors.New("listen: capabilities must be a JSON object")
	}
	var c Capabilities
	for _, row := range kinds {
		if row.allowed != nil {
			g, _ := obj[row.capability[0]].(map[string]any)
			b, _ := g[row.capability[1]].(bool)
			*row.allowed(&c) = b
		}
	}
	if exts, ok := obj["extensions"].(map[string]any); ok && len(exts) > 0 {
		c.Extensions = exts
	}
	return c, nil
}

// Allows reports whether c advertises every core kind f asks for: each list
// change whose key is true, and resource updates when f has a list under
// resourceSubscriptions. Narrowing f against c, as Open does, then keeps
// each of them; the other keys (extensions') are not looked at. An adapter
// that caches what its server advertises (Options.CapabilitiesFor) can
// tell with it when a listen asks for more than its last reading.
func (c Capabilities) Allows(f Filter) bool {
	for k := range kinds {
		row := &kinds[k]
		if !Kind(k).core() || *row.allowed(&c) {
			continue
		}
		v, ok := f[row.key]
		switch {
		case !ok:
		case row.uri:
			if _, isList := asList(v); isList {
				return false
			}
		case v == true:
			return false
		}
	}
	return true
}

// hasExtension reports whether the extension id is advertised.
func (c Capabilities) hasExtension(id string) bool {
	_, ok := c.Extensions[id]
	return ok
}
