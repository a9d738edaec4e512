// Package early sorts the early endings of a listen (a listen the server
// ended before its client or its source did: see listen.Options.EndWithError)
// into the four counters that the stdio and streamhttp servers report in
// their Stats: Revoked, Expired, Lifetime and FellBehind.
package early

import "github.com/mcplisten/listen"

// N is the number of counters, the length of an array indexed by Index.
const N = 4

// Index returns the index of reason's early ending among the counters
// (0 Revoked, 1 Expired, 2 Lifetime, 3 FellBehind), by listen.Classify, or
// -1 for any other reason.
func Index(reason error) int {
	switch listen.Classify(reason) {
	case "revoked":
		return 0
	case "expired":
		return 1
	case "lifetime":
		return 2
	case "fell_behind":
		return 3
	}
	return -1
}
