package otel_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a stream's, a handler's, a test
// client's) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
