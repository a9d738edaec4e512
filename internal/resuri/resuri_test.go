package resuri_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen/internal/resuri"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"file:///a/b", "file:///a/b"},
		{"FILE:///A/B", "file:///A/B"},
		{"HTTP://Example.COM:8080/Path?Q=1#F", "http://example.com:8080/Path?Q=1#F"},
		{"http://User:Pw@Host/", "http://User:Pw@host/"},
		{"http://[::AB]:1/", "http://[::ab]:1/"},
		{"file:///a%2fb", "file:///a%2Fb"},
		{"file:///a%2Fb", "file:///a%2Fb"},
		{"file:///%7e%41%2E%5f%2d%30", "file:///~A._-0"},
		{"file:///%2E%2e/x", "file:///../x"},
		{"file:///%c3%a9", "file:///%C3%A9"},
		{"file:///é", "file:///é"},
		{"x:%41?%61#%62", "x:A?a#b"},
		{"http://%41b/", "http://ab/"}, // not a valid URI, normalised anyway
		{"file:///50%", "file:///50%"}, // malformed escapes are kept
		{"file:///%4", "file:///%4"},
		{"file:///%zz", "file:///%zz"},
		{"no-scheme/%41", "no-scheme/A"},
		{"1x:/A", "1x:/A"},
	} {
		assert.Equal(t, tc.want, resuri.Canonical(tc.in), tc.in)
		assert.Equal(t, tc.want, resuri.Canonical(tc.want), "idempotent: %s", tc.want)
	}
}

func TestCanonicalDoesNotAllocateWhenNormal(t *testing.T) {
	u := "file:///project/src/main.go?v=%2F"
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = resuri.Canonical(u) }))
}

func TestFolders(t *testing.T) {
	folders := func(c string) []string {
		var out []string
		resuri.Folders(c, func(f string) bool { out = append(out, f); return true })
		return out
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"file:///a/b", []string{"file:///a/", "file:///a", "file:///", "file://"}},
		{"file:///a/b/", []string{"file:///a/b", "file:///a/", "file:///a", "file:///", "file://"}},
		{"file:///a/b?x#y", []string{"file:///a/b", "file:///a/", "file:///a", "file:///", "file://"}},
		{"http://h", nil},
		{"http://h?q", []string{"http://h"}},
		{"http://h/", []string{"http://h"}},
		{"file:/a/b", []string{"file:/a/", "file:/a", "file:/", "file:"}},
		{"urn:a/b", []string{"urn:a/", "urn:a"}},
		{"urn:isbn:1", nil},
		{"file:///a//b", []string{"file:///a//", "file:///a/", "file:///a", "file:///", "file://"}},
		{"file:///a/../b", nil},
		{"file:///a/./b", nil},
		{"file:///a/..", nil},
		{"file:///a/...", []string{"file:///a/", "file:///a", "file:///", "file://"}},
		{"file:///a/.b/c", []string{"file:///a/.b/", "file:///a/.b", "file:///a/", "file:///a", "file:///", "file://"}},
		{"file:///a?/b/../c", []string{"file:///a", "file:///", "file://"}},
		{"no-scheme/a/b", nil},
	} {
		assert.Equal(t, tc.want, folders(tc.in), tc.in)
	}
	var n int
	resuri.Folders("file:///a/b/c", func(string) bool { n++; return n < 2 })
	assert.Equal(t, 2, n, "yield false stops")
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		sub, upd string
		want     bool
	}{
		{"file:///a/", "file:///a/b", true},
		{"file:///a", "file:///a/b", true},
		{"file:///a", "file:///a/", true},
		{"file:///a/", "file:///a", false},
		{"file:///a", "file:///ab", false},
		{"file:///a", "file:///a%2Fb", false},
		{"file:///a%2F", "file:///a%2Fb", false},
		{"file:///a%2f", "file:///a%2F", true},
		{"file:///a", "file:///a/../b", false},
		{"file:///b", "file:///a/../b", false},
		{"file:///a/../b", "file:///a/%2E%2E/b", true},
		{"file:///a/", "file:///a/%2e%2e/x", false},
		{"file:///a", "file://host/a/b", false},
		{"file:///a", "http:///a/b", false},
		{"file:/a", "file:///a/b", false},
		{"FILE:///a", "file:///a/b", true},
		{"file:///A", "file:///a/b", false},
		{"http://H/x", "http://h/x/y", true},
		{"http://u@h/x", "http://h/x/y", false},
		{"http://h:1/x", "http://h/x/y", false},
		{"file:///a", "file:///a/b?v=2", true},
		{"file:///a/b", "file:///a/b?v=2", true},
		{"file:///a/b?v=2", "file:///a/b?v=2", true},
		{"file:///a?v=2", "file:///a/b", false},
		{"file:///a#f", "file:///a/b", false},
		{"http://h", "http://h/", true},
		{"http://h/", "http://h", false},
		{"file:///%7Ea", "file:///~a/b", true},
	} {
		assert.Equal(t, tc.want, resuri.Covers(tc.sub, tc.upd), "%s covers %s", tc.sub, tc.upd)
	}
}

func TestSegments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"file:///a/b/", 3},
		{"file:///", 1},
		{"file://", 0},
		{"http://h/a?x/y#z/w", 1},
		{"urn:a/b", 1},
		{"no-scheme/a/b", 2},
		{"file://h//", 2},
	} {
		assert.Equal(t, tc.want, resuri.Segments(tc.in), tc.in)
	}
}
