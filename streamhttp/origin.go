package streamhttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// DefaultCheckOrigin is the origin check of a Handler whose
// Options.CheckOrigin is nil and that has no AllowedHosts or
// AllowedOrigins. It refuses, in this order:
//
//   - a request that arrived on a loopback address but names a Host that is
//     not a loopback name ("localhost" or a loopback IP): the mark of a DNS
//     rebinding attack on a local server (the go-sdk's StreamableHTTPHandler
//     applies the same rule by default);
//   - a cross-origin browser request, by the rules of
//     http.CrossOriginProtection: a Sec-Fetch-Site header other than
//     same-origin or none, or, without Sec-Fetch-Site, an Origin whose
//     host differs from Host. Unlike http.CrossOriginProtection, every
//     method is checked, GET, HEAD and OPTIONS included: MCP requires the
//     Origin of every incoming request to be validated.
//
// Requests without Origin and Sec-Fetch-Site (non-browser clients) pass. A
// server on a non-loopback address is not protected from DNS rebinding by
// it: list the names it serves in Options.AllowedHosts. To trust
// cross-origin browser requests from some origins, list them in
// Options.AllowedOrigins.
func DefaultCheckOrigin(r *http.Request) error { return defaultGuard.check(r) }

var defaultGuard = &originGuard{}

// Errors of the origin checks: the cause of a 403 (see listen.Options.OnRefuse).
var (
	errRebinding      = errors.New("streamhttp: non-loopback Host on a loopback address")
	errHostNotAllowed = errors.New("streamhttp: Host not in AllowedHosts")
	errCrossOrigin    = errors.New("streamhttp: cross-origin request")
)

// originGuard is the Origin and Host check of a Handler with the default
// CheckOrigin: AllowedHosts (or, without them, the loopback rule), then the
// cross-origin rules with AllowedOrigins trusted. It is read-only after New.
type originGuard struct {
	hosts   []hostPattern
	origins map[string]bool // normalised: lower-case scheme://host[:port]
}

// hostPattern is one AllowedHosts entry: a lower-case host name or IP
// (without brackets), and a port, or "" for any port.
type hostPattern struct {
	host, port string
}

// newOriginGuard validates AllowedHosts and AllowedOrigins.
func newOriginGuard(hosts, origins []string) (*originGuard, error) {
	g := &originGuard{}
	for _, h := range hosts {
		p, err := parseHostPattern(h)
		if err != nil {
			return nil, fmt.Errorf("%w: AllowedHosts: %v", ErrInvalidOptions, err)
		}
		g.hosts = append(g.hosts, p)
	}
	for _, o := range origins {
		n, err := normaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("%w: AllowedOrigins: %v", ErrInvalidOptions, err)
		}
		if g.origins == nil {
			g.origins = make(map[string]bool)
		}
		g.origins[n] = true
	}
	return g, nil
}

// parseHostPattern parses "host", "host:port", "[v6]" or "[v6]:port".
func parseHostPattern(s string) (hostPattern, error) {
	if s == "" || strings.ContainsAny(s, "/?#@ \t") {
		return hostPattern{}, fmt.Errorf("%q is not a host or host:port", s)
	}
	host, port := splitHost(s)
	if host == "" {
		return hostPattern{}, fmt.Errorf("%q has no host", s)
	}
	if port != "" {
		if _, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil {
			return hostPattern{}, fmt.Errorf("%q has an invalid port", s)
		}
	}
	return hostPattern{host: host, port: port}, nil
}

// splitHost splits a Host header value or host pattern into its lower-case
// host (without brackets) and its port ("" if none).
func splitHost(s string) (host, port string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")), ""
}

// normaliseOrigin checks that s is an origin, scheme://host[:port], and
// returns it with its scheme and host in lower case.
func normaliseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", s)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	// Browsers leave the default port out of Origin.
	if (scheme == "http" && strings.HasSuffix(host, ":80")) || (scheme == "https" && strings.HasSuffix(host, ":443")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	return scheme + "://" + host, nil
}

// check applies the guard to r.
func (g *originGuard) check(r *http.Request) error {
	if err := g.checkHost(r); err != nil {
		return err
	}
	return g.checkCrossOrigin(r)
}

// checkHost applies AllowedHosts, or without them the loopback rule.
func (g *originGuard) checkHost(r *http.Request) error {
	if len(g.hosts) > 0 {
		host, port := splitHost(r.Host)
		for _, p := range g.hosts {
			if p.host == host && (p.port == "" || p.port == port) {
				return nil
			}
		}
		return errHostNotAllowed
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if isLoopback(la.String()) && !isLoopback(r.Host) {
			return errRebinding
		}
	}
	return nil
}

// checkCrossOrigin refuses a cross-origin browser request whose Origin is
// not trusted.
func (g *originGuard) checkCrossOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "" && g.origins != nil {
		if n, err := normaliseOrigin(origin); err == nil && g.origins[n] {
			return nil
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return nil
	default:
		return errCrossOrigin
	}
	if origin == "" {
		return nil // not a browser, or an old one on a same-origin request
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return errCrossOrigin
}

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(hostport string) bool {
	host, _ := splitHost(hostport)
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
