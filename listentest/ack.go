package listentest

// AckFor returns the notifications filter of the acknowledgement a listen
// asking for every kind, with resourceSubscriptions uris, gets by the rules
// of narrowing from a server whose server/discover advertises caps (the
// capabilities object, as encoding/json decodes it into a map): each kind
// whose capability (tools.listChanged, prompts.listChanged,
// resources.listChanged, resources.subscribe) is true, with uris for
// resourceSubscriptions.
func AckFor(caps map[string]any, uris []any) map[string]any {
	flag := func(group, name string) bool {
		g, _ := caps[group].(map[string]any)
		b, _ := g[name].(bool)
		return b
	}
	want := map[string]any{}
	if flag("tools", "listChanged") {
		want["toolsListChanged"] = true
	}
	if flag("prompts", "listChanged") {
		want["promptsListChanged"] = true
	}
	if flag("resources", "listChanged") {
		want["resourcesListChanged"] = true
	}
	if flag("resources", "subscribe") {
		want["resourceSubscriptions"] = uris
	}
	return want
}
