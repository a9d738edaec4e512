package hub

import (
	"errors"
	"fmt"

	"github.com/mcplisten/listen"
)

var (
	// ErrInvalidOptions matches every error New returns for invalid Options.
	ErrInvalidOptions = errors.New("hub: invalid options")
	// errInvalidFilter is returned by Open for a filter that is not a JSON
	// object (see listen.Filter: JSON values only). listen.Open turns it into the
	// internal error "Subscription source failed to open".
	errInvalidFilter = errors.New("hub: invalid subscription filter")
	// errPullPending is returned by a stream's Next while another Next on the
	// same stream is blocked. A subscription's worker never does that; it
	// reveals a second puller.
	errPullPending = errors.New("hub: pull already pending")
	// errShutdown is returned by Open after Shutdown: it matches
	// listen.ErrShutdown, and the subscription fails to open with the
	// internal error "Subscription source failed to open".
	errShutdown = fmt.Errorf("hub: shut down: %w", listen.ErrShutdown)

	// errHookPanicked is the cause of the Failed reason a new listener is
	// closed with when OnOpen panics.
	errHookPanicked = errors.New("hub: OnOpen hook panicked")
)
