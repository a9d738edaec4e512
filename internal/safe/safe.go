// Package safe runs user callbacks (hooks, a Source's methods, policies)
// so that a panic in one is returned to the caller instead of unwinding
// the library's goroutine: the one place the library recovers panics.
package safe

import "runtime/debug"

// Panic is a recovered panic: its value and the stack of the goroutine
// where it happened.
type Panic struct {
	Value any
	Stack []byte
}

// Call runs f and returns its panic, or nil when f returned. A panic is
// recovered whatever its value (http.ErrAbortHandler included: a callback
// has no handler to abort; panic(nil) comes back as a
// *runtime.PanicNilError, so it is never mistaken for a return).
func Call(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}
