package streamhttp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a stream's worker, a handler, a
// test client) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
