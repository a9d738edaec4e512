package natsbridge

// ProcessCPU is processCPU, for the external tests' benchmarks.
var ProcessCPU = processCPU

// reportCPUPerOp reports the process's CPU time per operation since cpu0
// (see processCPU): on a shared machine it varies much less than ns/op,
// which counts the time other programs held the cores.
func reportCPUPerOp(b interface {
	ReportMetric(float64, string)
}, cpu0 float64, ok bool, ops int) {
	cpu1, ok1 := processCPU()
	if ok && ok1 && ops > 0 {
		b.ReportMetric((float64(cpu1.Nanoseconds())-cpu0)/float64(ops), "cpu-ns/op")
	}
}
