package harness

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PhaseLoad is the CPU the machine spent during one phase of the run, split
// between this benchmark (with its server processes and builds) and every
// other process: on a shared machine, the others' share is noise.
type PhaseLoad struct {
	Phase string
	Wall  time.Duration
	// Own is the CPU time of this process and its waited-for children (the
	// servers, the builds); Other is the rest of the machine's busy time.
	Own, Other time.Duration
}

// cpuSnapshot is the machine's busy time and ours at one moment.
type cpuSnapshot struct {
	at        time.Time
	busy, own time.Duration
}

// clockTick is USER_HZ, the unit of /proc/stat (100 on Linux).
const clockTick = 10 * time.Millisecond

func snapshotCPU() cpuSnapshot {
	s := cpuSnapshot{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i := range f {
			if i == 0 || i == 4 || i == 5 || i > 8 {
				continue // the label, idle, iowait, guest times
			}
			n, _ := strconv.ParseInt(f[i], 10, 64)
			s.busy += time.Duration(n) * clockTick
		}
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			s.own += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return s
}

// since returns the load of the phase that began at s.
func (s cpuSnapshot) since(phase string) PhaseLoad {
	e := snapshotCPU()
	own := e.own - s.own
	return PhaseLoad{Phase: phase, Wall: e.at.Sub(s.at), Own: own, Other: max(0, e.busy-s.busy-own)}
}
