package jsonobj

// Members returns the members of obj in order; ok is false if obj is not
// a JSON object. The tests compare Each with it.
func Members(obj []byte) (ms []Member, ok bool) {
	ok = Each(obj, func(m Member) bool {
		ms = append(ms, m)
		return true
	})
	return ms, ok
}
