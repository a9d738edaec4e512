package otelnats_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a bridge's, the NATS server's)
// outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
