//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"os"
	"syscall"
	"time"
)

// pollable returns f itself when its Read and Write can be interrupted
// already (deadlines work: os.Pipe, a descriptor that was non-blocking when
// its *os.File was made) or when it is not a pipe or a socket (a terminal, a
// regular file). Otherwise it returns a duplicate of f's descriptor in
// non-blocking mode, registered with the runtime's poller so that deadlines
// work on it, and a function, to call once no Read or Write is pending on
// the duplicate, that closes it and puts the descriptor back in blocking
// mode (the mode is shared by every descriptor of the same open file
// description). See Options.BlockingFiles.
func pollable(f *os.File) (*os.File, func()) {
	nothing := func() {}
	if f.SetDeadline(time.Time{}) == nil {
		return f, nothing
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, nothing
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f, nothing
	}
	dup, derr := -1, error(nil)
	err = rc.Control(func(fd uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		dup, derr = syscall.Dup(int(fd))
		if derr == nil {
			syscall.CloseOnExec(dup)
		}
	})
	if err != nil || derr != nil {
		return f, nothing
	}
	if syscall.SetNonblock(dup, true) != nil {
		syscall.Close(dup)
		return f, nothing
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	restore := func() {
		if rc, err := nf.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
		}
		_ = nf.Close()
	}
	if nf == nil || nf.SetDeadline(time.Time{}) != nil {
		// Not registered with the poller after all: use f as it is.
		if nf != nil {
			restore()
		}
		return f, nothing
	}
	return nf, restore
}
