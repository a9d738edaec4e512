// Package reliability_test holds the reliability tests of issue "Proof
// against the field": a fault matrix run over both transports (streamhttp on
// real loopback HTTP, stdio on real io.Pipe and os.Pipe pairs), a churn soak
// and an isolation property test on a hub.Hub. It contains tests only.
package reliability_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a handler, a worker, a stdio
// connection, a test client) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
