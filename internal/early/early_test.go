package early_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/early"
)

// Each early ending has its counter, also wrapped; every other reason has
// none.
func TestIndex(t *testing.T) {
	for want, reason := range []error{listen.ErrRevoked, listen.ErrExpired, listen.ErrLifetime, listen.ErrFellBehind} {
		assert.Equal(t, want, early.Index(reason), "%v", reason)
		assert.Equal(t, want, early.Index(fmt.Errorf("wrapped: %w", reason)), "%v wrapped", reason)
	}
	for _, reason := range []error{nil, listen.ErrComplete, listen.ErrCancelled, listen.ErrDisconnected, listen.ErrShutdown, context.Canceled, errors.New("other")} {
		assert.Equal(t, -1, early.Index(reason), "%v", reason)
	}
}
