//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package stdio

import "os"

// pollable returns f as it is: on this system Serve does not make a
// blocking descriptor interruptible (see Options.BlockingFiles).
func pollable(f *os.File) (*os.File, func()) { return f, func() {} }
