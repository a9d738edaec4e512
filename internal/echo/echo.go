// Package echo bounds what an error message repeats of a client's input.
package echo

import "unicode/utf8"

// Max bounds how much of a value the client sent (a header, a method) an
// error message repeats, so that an error response stays small whatever
// the request (a string, decoded, may take three times the bytes it took
// in the request).
const Max = 128

// Cut returns s, or its first Max bytes (cut at a character boundary)
// followed by "...".
func Cut(s string) string {
	if len(s) <= Max {
		return s
	}
	i := Max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
