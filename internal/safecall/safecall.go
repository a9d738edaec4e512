// Package safecall runs a user's callback so that its panic never takes
// down the goroutine that called it: the one place where cluster and
// upstream recover such a panic.
package safecall

// Run calls f and returns the value it panicked with, or nil when it
// returned. (A panic(nil) comes back as a *runtime.PanicNilError, so a
// panic is never mistaken for a return.) The caller decides what a panic
// means: count it, log it, drop the message it was about.
func Run(f func()) (panicked any) {
	defer func() { panicked = recover() }()
	f()
	return nil
}
