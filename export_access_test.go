package listen

// Principals returns the number of principals a tracks (with open streams,
// or with a Check in flight).
func Principals(a *Access) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.groups)
}
