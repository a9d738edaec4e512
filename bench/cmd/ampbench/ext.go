package main

import (
	"context"

	"github.com/mcplisten/listen"
)

// The parts of the server that follow the library's API; the rest of the
// program builds against any version since the first release, so that the
// same measurements can be taken before and after a change (for an older
// version, give watchExt that version's shaper signature and make setLimits
// set nothing it lacks).

const extID = "com.example/watch"

// watchExt is an extension with a filter key ("watch") and its own events,
// whose shaper reads one member of the client's settings per event, as a
// real one would.
type watchExt struct{}

func (watchExt) ID() string                   { return extID }
func (watchExt) SupportsProtocol(string) bool { return true }

func (watchExt) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if v, ok := requested["watch"]; ok {
		return listen.Filter{"watch": v}, nil
	}
	return nil, nil
}

func (watchExt) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter, settings listen.Settings) (string, map[string]any, error) {
	verbose, _ := settings.Value("verbose")
	return "notifications/com.example/watch", map[string]any{"event": ev.Payload, "verbose": verbose == true}, nil
}

// setLimits sets the listen limits that the measured version has.
func setLimits(o *listen.Options, maxSettings, maxSegments int) {
	o.MaxSettingsBytes = maxSettings
	o.MaxURISegments = maxSegments
}
