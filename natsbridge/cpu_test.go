package natsbridge_test

import "github.com/mcplisten/listen/listentest"

// reportCPUPerOp reports the process's CPU time per operation since cpu0
// (see listentest.ProcessCPU): on a shared machine it varies much less
// than ns/op, which counts the time other programs held the cores.
func reportCPUPerOp(b interface {
	ReportMetric(float64, string)
}, cpu0 float64, ok bool, ops int) {
	cpu1, ok1 := listentest.ProcessCPU()
	if ok && ok1 && ops > 0 {
		b.ReportMetric((float64(cpu1.Nanoseconds())-cpu0)/float64(ops), "cpu-ns/op")
	}
}
