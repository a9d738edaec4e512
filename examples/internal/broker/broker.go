// Package broker joins an example server to the other instances of the
// same MCP server through a broker, with one flag: -broker nats://HOST:PORT
// (the NATS bridge, natsbridge) or -broker redis://HOST:PORT (the Redis
// bridge, redisbridge; rediss:// for TLS, redis://USER:PASSWORD@HOST:PORT
// for an ACL user). -broker-key or -broker-key-file turns on envelope
// authentication. The example servers examples/server and examples/stdio
// use it the same way (the tests join two mcp-go instances with it too):
//
//	bc := broker.Flags(flag.CommandLine) // before flag.Parse
//	...
//	leave, err := bc.Join(h, logger, m) // h: the hub the listens are served from
//	defer leave()
//
// Join then joins the hub to the broker as its relay: every change
// published on the hub, by the SDK adapter (gosdk, mcpgo) or the server's code,
// reaches the listens held by every instance, and theirs reach this one.
// It logs the bridge's connection changes, drops and resyncs (and, at
// Debug, each event), records its metrics when m is not nil
// (listenotel.Metrics.InstrumentBridge), and shows its counters at
// /debug/vars under "broker" (expvar) when the server serves that page.
//
// Join starts the bridge's goroutines (see natsbridge and redisbridge);
// the function it returns closes the bridge, which ends them.
package broker

import (
	"bytes"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/redisbridge"
)

// Config is what the flags say.
type Config struct {
	// URL is -broker: empty for a server on its own.
	URL string
	// Key is -broker-key: a shared key, at least 32 bytes of text.
	Key string
	// KeyFile is -broker-key-file: a file of keys, one per line; the
	// first signs, every one is accepted (a key rotation).
	KeyFile string
}

// Flags registers -broker, -broker-key and -broker-key-file on fs and
// returns the Config they fill in once fs is parsed.
func Flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.URL, "broker", "", "join the other instances of this server through a broker: nats://HOST:PORT (NATS) or redis://[USER:PASSWORD@]HOST:PORT (Redis)")
	fs.StringVar(&c.Key, "broker-key", "", "shared key (at least 32 bytes) that signs and authenticates the messages between instances; prefer -broker-key-file")
	fs.StringVar(&c.KeyFile, "broker-key-file", "", "file of shared keys, one per line: the first signs, all are accepted (for a key rotation)")
	return c
}

// Keys returns the keys the flags name (nil: no authentication).
func (c *Config) Keys() ([][]byte, error) {
	switch {
	case c.Key != "" && c.KeyFile != "":
		return nil, errors.New("give -broker-key or -broker-key-file, not both")
	case c.Key != "":
		return [][]byte{[]byte(c.Key)}, nil
	case c.KeyFile != "":
		b, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, err
		}
		var keys [][]byte
		for line := range bytes.Lines(b) {
			if k := bytes.TrimSpace(line); len(k) > 0 {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("-broker-key-file %s holds no key", c.KeyFile)
		}
		return keys, nil
	}
	return nil, nil
}

// bridge is what Join keeps of either bridge.
type bridge interface {
	ID() string
	Stats() cluster.Stats
	Close() error
}

// joined is the bridge /debug/vars shows; vars registers the page once.
var (
	joined atomic.Pointer[bridge]
	vars   sync.Once
)

// Join joins h to the broker c.URL names, or does nothing (and returns a
// function that does nothing) when it is empty. logger receives the
// bridge's events; m, if not nil, its metrics.
func (c *Config) Join(h *hub.Hub, logger *slog.Logger, m *listenotel.Metrics) (leave func() error, err error) {
	if c.URL == "" {
		if c.Key != "" || c.KeyFile != "" {
			return nil, errors.New("-broker-key and -broker-key-file need -broker")
		}
		return func() error { return nil }, nil
	}
	keys, err := c.Keys()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("-broker: %w", err)
	}
	opts := cluster.Options{AuthKeys: keys, Logger: logger}
	var b bridge
	switch u.Scheme {
	case "nats", "tls":
		m.InstrumentBridge("nats", &opts)
		b, err = natsbridge.Connect(c.URL, h, natsbridge.Options{Options: opts},
			nats.Name("mcplisten-example"), nats.ReconnectWait(250*time.Millisecond))
	case "redis", "rediss":
		m.InstrumentBridge("redis", &opts)
		b, err = redisbridge.Connect(c.URL, h, redisbridge.Options{Options: opts})
	default:
		return nil, fmt.Errorf("-broker %s: the scheme must be nats, tls, redis or rediss", u.Redacted())
	}
	if err != nil {
		return nil, err
	}
	logger.Info("joined the other instances", "broker", u.Redacted(), "instance", b.ID(), "signed", keys != nil)
	joined.Store(&b)
	vars.Do(func() {
		expvar.Publish("broker", expvar.Func(func() any {
			if p := joined.Load(); p != nil {
				return (*p).Stats()
			}
			return nil
		}))
	})
	return func() error {
		joined.CompareAndSwap(&b, nil)
		return b.Close()
	}, nil
}
