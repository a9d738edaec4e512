package sessions_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (an expiry timer's, a handler, a
// test client) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
