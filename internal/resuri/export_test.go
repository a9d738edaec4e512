package resuri

// Covers reports whether the subscribed URI covers the updated one under
// the built-in rule: their normal forms are equal, or the subscribed one's
// is one of the Folders of the updated one's.
func Covers(subscribed, updated string) bool {
	s, u := Canonical(subscribed), Canonical(updated)
	if s == u {
		return true
	}
	found := false
	Folders(u, func(f string) bool {
		found = f == s
		return !found
	})
	return found
}
