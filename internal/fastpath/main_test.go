package fastpath_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a writer loop, a slow path, the
// hang-up watcher, a stream's end) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
