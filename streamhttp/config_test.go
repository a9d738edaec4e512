package streamhttp_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/streamhttp"
)

// config is what a test configures, flat so that a table row names both
// halves: the Handler's Options and the listen.Server's policy (Listen,
// with the fields below it copied in).
type config struct {
	MaxBodyBytes   int64
	ReadTimeout    time.Duration
	KeepAlive      time.Duration
	WriteTimeout   time.Duration
	CheckOrigin    func(r *http.Request) error
	AllowedHosts   []string
	AllowedOrigins []string
	Authenticate   func(r *http.Request) (any, error)
	Expiry         func(r *http.Request, auth any) time.Time
	RequireHeaders bool
	NoTakeover     bool
	OnKeepAlive    func(sub *listen.Subscription)

	Listen            listen.Options
	MaxStreams        int
	MaxStreamsPerKey  int
	StreamKey         func(req *listen.Request) string
	RetryAfter        time.Duration
	SupportedVersions []string
	OnOpen            func(sub *listen.Subscription)
	OnClose           func(sub *listen.Subscription, reason error)
	OnRefuse          func(req *listen.Request, err error)
	Logger            *slog.Logger
}

// split returns the Server's options and the Handler's.
func (c config) split() (listen.Options, streamhttp.Options) {
	lo := c.Listen
	lo.MaxStreams, lo.MaxStreamsPerKey, lo.StreamKey = c.MaxStreams, c.MaxStreamsPerKey, c.StreamKey
	lo.RetryAfter, lo.SupportedVersions = c.RetryAfter, c.SupportedVersions
	lo.OnOpen, lo.OnClose, lo.OnRefuse, lo.Logger = c.OnOpen, c.OnClose, c.OnRefuse, c.Logger
	return lo, streamhttp.Options{
		MaxBodyBytes: c.MaxBodyBytes, ReadTimeout: c.ReadTimeout, KeepAlive: c.KeepAlive,
		WriteTimeout: c.WriteTimeout, CheckOrigin: c.CheckOrigin, AllowedHosts: c.AllowedHosts,
		AllowedOrigins: c.AllowedOrigins, Authenticate: c.Authenticate, Expiry: c.Expiry,
		RequireHeaders: c.RequireHeaders, NoTakeover: c.NoTakeover, OnKeepAlive: c.OnKeepAlive,
	}
}

// build returns the Handler c describes on src, or New's error.
func (c config) build(src listen.Source) (*streamhttp.Handler, error) {
	lo, ho := c.split()
	return streamhttp.New(listen.NewServer(src, lo), ho)
}

// newHandler returns the Handler c describes on src, failing the test on
// error.
func newHandler(t testing.TB, src listen.Source, c config) *streamhttp.Handler {
	t.Helper()
	h, err := c.build(src)
	require.NoError(t, err)
	return h
}
