package streamhttp

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// DefaultCheckOrigin is the origin check of a Handler whose
// Options.CheckOrigin is nil. It refuses, in this order:
//
//   - a request that arrived on a loopback address but names a Host that is
//     not a loopback name ("localhost" or a loopback IP): the mark of a DNS
//     rebinding attack on a local server (the go-sdk's StreamableHTTPHandler
//     applies the same rule by default);
//   - a cross-origin browser request, by the checks of a zero
//     http.CrossOriginProtection: a Sec-Fetch-Site header other than
//     same-origin or none, or else an Origin whose host differs from Host.
//
// Requests without Origin and Sec-Fetch-Site (non-browser clients) pass. To
// trust more origins, compose it with your own http.CrossOriginProtection.
func DefaultCheckOrigin(r *http.Request) error {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if isLoopback(la.String()) && !isLoopback(r.Host) {
			return errRebinding
		}
	}
	return crossOrigin.Check(r)
}

// crossOrigin has no trusted origins and no bypass patterns; its Check only
// reads it, so it is safe for concurrent use.
var crossOrigin = new(http.CrossOriginProtection)

var errRebinding = errors.New("streamhttp: non-loopback Host on a loopback address")

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
