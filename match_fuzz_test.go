package listen_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
)

// FuzzSubResources checks the sub-resource rule of Options.SubResources, as
// the core shapes updates and as the hub selects listeners, against a naive
// reference written straight from the documented definition. For a
// subscribed URI s and an updated URI u (both absolute URIs):
//
//   - a subscription with SubResources delivers u exactly when the
//     reference says s covers u, and so does the hub select it;
//   - without SubResources, exactly when s == u (as before);
//   - with a CanRead that refuses every URI containing "x", never a URI
//     containing "x", unless it is s itself, which Open accepted.
func FuzzSubResources(f *testing.F) {
	for _, seed := range [][2]string{
		{"file:///a/", "file:///a/b"},
		{"file:///a", "file:///a/b"},
		{"file:///a", "file:///ab"},
		{"file:///a", "file:///a%2Fb"},
		{"file:///a%2F", "file:///a%2Fb"},
		{"file:///a%2f", "file:///a%2F/b"},
		{"file:///a/", "file:///a/../b"},
		{"file:///b", "file:///a/../b"},
		{"file:///a/", "file:///a/%2E%2E/b"},
		{"file:///a/", "file:///a/%2e/b"},
		{"file:///a", "file://host/a/b"},
		{"file:///a", "http:///a/b"},
		{"file:/a", "file:///a/b"},
		{"FILE:///a", "file:///a/b"},
		{"http://User@Host:8080/x", "http://User@host:8080/x/y"},
		{"http://u@h/x", "http://U@h/x/y"},
		{"http://h", "http://h/"},
		{"http://h/", "http://h"},
		{"file:///a?q", "file:///a/b"},
		{"file:///a", "file:///a?q#f"},
		{"file:///a#f", "file:///a#f"},
		{"file:///%7Ea", "file:///~a/b"},
		{"urn:a", "urn:a/b"},
		{"urn:a:b", "urn:a:b:c"},
		{"http://[::1]/x", "http://[::1]/x/y"},
		{"file:///a//", "file:///a//b"},
		{"file:///x/", "file:///x/y"},
	} {
		f.Add(seed[0], seed[1])
	}
	opts := func(sub bool, canRead func(context.Context, *listen.Request, string) bool) *listen.Options {
		o := &listen.Options{Capabilities: listen.Capabilities{ResourcesSubscribe: true}, CanRead: canRead}
		if sub {
			o.SubResources = &listen.SubResources{}
		}
		return o
	}
	noX := func(_ context.Context, _ *listen.Request, uri string) bool { return !strings.Contains(uri, "x") }
	f.Fuzz(func(t *testing.T, s, u string) {
		if !listen.AbsoluteURI(s) || !listen.AbsoluteURI(u) {
			return
		}
		want := naiveCovers(s, u)
		h, err := hub.New(hub.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			opts *listen.Options
			want bool
		}{
			{"SubResources", opts(true, nil), want},
			{"exact", opts(false, nil), s == u},
			{"SubResources+CanRead", opts(true, noX), want && !strings.Contains(s, "x") && (u == s || !strings.Contains(u, "x"))},
		}
		selected := 0
		for i, tc := range cases {
			sub, err := listen.Open(context.Background(), h, subResRequest(strconv.Itoa(i), s), tc.opts)
			if err != nil && i == 0 && jsonrpc.CodeOf(err) == jsonrpc.CodeInvalidParams && strings.Contains(err.Error(), "path segments") {
				return // s is over Options.MaxURISegments: refused, as documented
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close(nil)
			msg, err := sub.Notification(listen.ResourceUpdated(u))
			if err != nil {
				t.Fatal(err)
			}
			if got := msg != nil; got != tc.want {
				t.Fatalf("%s: subscribed %q, updated %q: delivered %v, want %v", tc.name, s, u, got, tc.want)
			}
			if i < 2 && tc.want {
				selected++
			}
		}
		// The hub selects the first two listeners as the core decides (the
		// third one's CanRead is the core's business: the hub selects it
		// like the first, unless Open left s out).
		if want && !strings.Contains(s, "x") {
			selected++
		}
		r, err := h.ResourceUpdated(u)
		if err != nil {
			t.Fatal(err)
		}
		if r.Matched != selected {
			t.Fatalf("hub: subscribed %q, updated %q: matched %d, want %d", s, u, r.Matched, selected)
		}
	})
}

// naiveURI is a URI split and normalised the simplest way, for the
// reference rule.
type naiveURI struct {
	scheme  string
	hasAuth bool
	auth    string // userinfo as is, host and port lower-cased
	path    string
	rest    string // "?query#fragment", as is
}

func naiveParse(s string) naiveURI {
	scheme, rest, _ := strings.Cut(s, ":")
	n := naiveURI{scheme: naiveLower(scheme)}
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		rest = rest[end:]
		n.hasAuth = true
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			n.auth = naivePct(auth[:at+1]) + naiveLower(naivePct(auth[at+1:]))
		} else {
			n.auth = naiveLower(naivePct(auth))
		}
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		n.rest = naivePct(rest[q:])
		rest = rest[:q]
	}
	n.path = naivePct(rest)
	return n
}

func (n naiveURI) String() string {
	s := n.scheme + ":"
	if n.hasAuth {
		s += "//" + n.auth
	}
	return s + n.path + n.rest
}

// naiveCovers is the documented rule, read literally.
func naiveCovers(subscribed, updated string) bool {
	S, U := naiveParse(subscribed), naiveParse(updated)
	if S.String() == U.String() {
		return true
	}
	if S.rest != "" {
		return false // a query or a fragment: only itself
	}
	if S.scheme != U.scheme || S.hasAuth != U.hasAuth || S.auth != U.auth {
		return false
	}
	for _, seg := range strings.Split(U.path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	P, Q := S.path, U.path
	if Q == P {
		return true
	}
	return strings.HasPrefix(Q, P) && (strings.HasSuffix(P, "/") || Q[len(P)] == '/')
}

// naivePct upper-cases percent-encodings and decodes the unreserved ones.
func naivePct(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				c := byte(v)
				if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
					b.WriteByte(c)
				} else {
					fmt.Fprintf(&b, "%%%02X", c)
				}
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// naiveLower lower-cases ASCII letters only.
func naiveLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
