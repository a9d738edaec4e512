package conformance

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(reportingM{m}) }

// reportingM runs the tests, then prints what the suite validated.
type reportingM struct{ m *testing.M }

func (r reportingM) Run() int {
	code := r.m.Run()
	fmt.Printf("conformance: %d core messages validated (%d $defs checks), %d official examples, %d wrong messages rejected\n",
		stats.messages.Load(), stats.defChecks.Load(), stats.examples.Load(), stats.rejections.Load())
	return code
}
