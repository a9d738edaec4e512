package gosdk

import "time"

// SetRecountEvery sets how often a Handler counts the go-sdk's sessions
// again, and returns the function that restores it.
func SetRecountEvery(d time.Duration) (restore func()) {
	old := recountEvery
	recountEvery = d
	return func() { recountEvery = old }
}
