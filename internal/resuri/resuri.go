// Package resuri is the sub-resource rule of listen.Options.SubResources,
// shared by the core (notification shaping) and the hub (its folder index).
//
// The rule works on normalised URIs (Canonical). A subscribed URI S covers
// an updated URI U when Canonical(S) is Canonical(U) or one of the URIs that
// Folders yields for Canonical(U). Folders yields prefixes of its argument
// only, so it never allocates, and the URIs it yields form a chain: each one
// covers every longer one. listen.SubResources states the rule for users.
package resuri

import "strings"

// Canonical returns the syntax-based normal form of u (RFC 3986 section
// 6.2.2): the scheme and the host lower-cased (ASCII letters only), the hex
// digits of a percent-encoding upper-cased (6.2.2.1), and a percent-encoded
// unreserved character (ALPHA, DIGIT, '-', '.', '_', '~') decoded (6.2.2.2).
// Nothing else is decoded (%2F stays %2F), dot segments are not removed and
// no scheme-based normalisation is done. It returns u itself, without
// allocating, when u is already in normal form. A malformed percent-encoding
// is left as it is. A string without a scheme gets only the percent-encoding
// steps.
func Canonical(u string) string {
	l := layoutOf(u)
	if l.canonical(u) {
		return u
	}
	return string(l.appendCanonical(make([]byte, 0, len(u)), u))
}

// layout locates the parts of a URI that normalisation treats apart.
type layout struct {
	// scheme is the index of the ':' ending the scheme, or -1 when u has
	// no valid scheme.
	scheme int
	// host..hostEnd is the host and port (the authority after its
	// userinfo); both are -1 when there is no authority.
	host, hostEnd int
	// path is where the path starts (after the authority); pathEnd where
	// it ends (the '?' or '#' after it, or len(u)).
	path, pathEnd int
}

func layoutOf(u string) layout {
	l := layout{scheme: -1, host: -1, hostEnd: -1}
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c == ':' {
			if i > 0 {
				l.scheme = i
			}
			break
		}
		if !isAlpha(c) && (i == 0 || !isDigit(c) && c != '+' && c != '-' && c != '.') {
			break
		}
	}
	l.path = l.scheme + 1
	if l.scheme >= 0 && len(u) >= l.path+2 && u[l.path] == '/' && u[l.path+1] == '/' {
		a := l.path + 2
		end := len(u)
		for j := a; j < len(u); j++ {
			if c := u[j]; c == '/' || c == '?' || c == '#' {
				end = j
				break
			}
		}
		l.host, l.hostEnd = a, end
		for j := end - 1; j >= a; j-- {
			if u[j] == '@' {
				l.host = j + 1
				break
			}
		}
		l.path = end
	}
	l.pathEnd = len(u)
	for j := l.path; j < len(u); j++ {
		if c := u[j]; c == '?' || c == '#' {
			l.pathEnd = j
			break
		}
	}
	return l
}

// folded reports whether byte i of u is in the scheme or the host, whose
// letters are case-insensitive.
func (l layout) folded(i int) bool {
	return i < l.scheme || (i >= l.host && i < l.hostEnd)
}

func (l layout) canonical(u string) bool {
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c == '%' && i+2 < len(u) && isHex(u[i+1]) && isHex(u[i+2]):
			if isLowerHex(u[i+1]) || isLowerHex(u[i+2]) || unreserved(unhex(u[i+1])<<4|unhex(u[i+2])) {
				return false
			}
			i += 2
		case c >= 'A' && c <= 'Z' && l.folded(i):
			return false
		}
	}
	return true
}

func (l layout) appendCanonical(b []byte, u string) []byte {
	const upper = "0123456789ABCDEF"
	for i := 0; i < len(u); i++ {
		c := u[i]
		fold := l.folded(i)
		if c == '%' && i+2 < len(u) && isHex(u[i+1]) && isHex(u[i+2]) {
			d := unhex(u[i+1])<<4 | unhex(u[i+2])
			i += 2
			if !unreserved(d) {
				b = append(b, '%', upper[d>>4], upper[d&15])
				continue
			}
			c = d
		}
		if fold && c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// Folders calls yield with each URI other than c that covers the
// normalised URI c (see Canonical), longest first, until yield returns
// false:
//
//   - when c has a query or a fragment, c without them;
//   - for each '/' of c's path, from the last: c up to and including it
//     (unless that is the whole path), then c up to it (unless that ends
//     with '/' too: it comes next).
//
// Each URI is yielded once.
//
// So file:///a/b?x yields file:///a/b, file:///a/, file:///a, file:///
// and file://. It yields nothing when c has no scheme or when a segment of
// its path is "." or ".." (such a URI is covered only by itself). Every
// URI it yields is a prefix of c: nothing is allocated.
func Folders(c string, yield func(string) bool) {
	l := layoutOf(c)
	if l.scheme < 0 || hasDotSegment(c[l.path:l.pathEnd]) {
		return
	}
	if l.pathEnd < len(c) && !yield(c[:l.pathEnd]) {
		return
	}
	for i := l.pathEnd - 1; i >= l.path; i-- {
		if c[i] != '/' {
			continue
		}
		if i+1 < l.pathEnd && !yield(c[:i+1]) {
			return
		}
		if i > l.path && c[i-1] == '/' {
			continue // c[:i] ends with '/': the next round yields it
		}
		if !yield(c[:i]) {
			return
		}
	}
}

// Segments returns the number of '/' in u's path (after its scheme and
// authority, before its query or fragment): the number of its folders
// that end with '/', about half of those Folders yields.
func Segments(u string) int {
	l := layoutOf(u)
	return strings.Count(u[l.path:l.pathEnd], "/")
}

// hasDotSegment reports whether a path has a segment "." or "..".
func hasDotSegment(p string) bool {
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if seg := p[start:i]; seg == "." || seg == ".." {
				return true
			}
			start = i + 1
		}
	}
	return false
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

func isLowerHex(c byte) bool { return c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// unreserved reports whether c is an unreserved character of RFC 3986.
func unreserved(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}
