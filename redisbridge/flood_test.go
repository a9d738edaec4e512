package redisbridge_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
)

// replies measures the answers a bridge's connections read from Redis:
// the largest number of bytes read between two writes (one reply, or the
// replies of one pipeline).
type replies struct {
	mu      sync.Mutex
	largest int
}

func (r *replies) max() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.largest
}

// dialer returns a go-redis Dialer whose connections report to r.
func (r *replies) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, r: r}, nil
	}
}

type countingConn struct {
	net.Conn
	r    *replies
	read int // since the last write; one goroutine at a time uses a connection
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.read = 0
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += n
	c.r.mu.Lock()
	c.r.largest = max(c.r.largest, c.read)
	c.r.mu.Unlock()
	return n, err
}

// TestFloodBounded: a client without the key appends, at once (one
// transaction), entries of about MaxMessageBytes and entries far larger.
// The bridge drops them all and counts each (unauthenticated; too large,
// with its size), and no reply it reads from Redis is larger than
// ReadBytes (plus framing): it fetches the entries in batches of at most
// ReadBytes and skips the oversized ones unread, where it used to read
// them all in one reply. A signed event appended afterwards is delivered.
func TestFloodBounded(t *testing.T) {
	const (
		maxMsg  = 64 << 10
		budget  = 128 << 10
		fit     = maxMsg - 1000 // within MaxMessageBytes: read, then refused
		huge    = 4 * maxMsg    // above it: skipped
		entries = 8             // of each
		framing = 4 << 10       // RESP headers and ids
	)
	tests := map[string]redisbridge.Options{
		"explicit": {ReadBytes: budget, Options: cluster.Options{MaxMessageBytes: maxMsg, AuthKeys: [][]byte{keyOld}}},
		// The default ReadBytes is 64 envelopes of maxMsg.
		"default": {Options: cluster.Options{MaxMessageBytes: maxMsg, AuthKeys: [][]byte{keyOld}}},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			limit := opts.ReadBytes
			if limit == 0 {
				limit = 4 << 20
			}
			srv := redistest.Run(t)
			var r replies
			ro, err := redis.ParseURL(srv.URL())
			require.NoError(t, err)
			ro.Dialer = r.dialer()
			h, err := hub.New(hub.Options{})
			require.NoError(t, err)
			rec := record(&opts.Options)
			b, err := redisbridge.New(ro, h, opts)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, b.Close()) })
			sender := join(t, "sender", srv.URL(), authOptions(keyOld))
			l := (&instance{name: "B", hub: h, bridge: b, rec: rec}).listen(t, toolsOnly)

			// Enough entries that all of them exceed the budget many times over
			// (the default one too).
			n := entries
			if opts.ReadBytes == 0 {
				n = 3 * limit / fit
			}
			c := raw(t, srv.URL())
			_, err = c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
				for i := range n {
					p.XAdd(context.Background(), &redis.XAddArgs{Stream: b.Stream(),
						Values: []any{"d", strings.Repeat("x", fit)}})
					if i < entries {
						p.XAdd(context.Background(), &redis.XAddArgs{Stream: b.Stream(),
							Values: []any{"d", strings.Repeat("y", huge)}})
					}
				}
				return nil
			})
			require.NoError(t, err)
			_, err = sender.hub.Publish(tagged(listen.ToolsListChanged(), "genuine"))
			require.NoError(t, err)
			assert.Equal(t, "genuine", l.next(t).id)

			st := b.Stats()
			assert.Equal(t, cluster.Drops{Unauthenticated: uint64(n), TooLarge: entries}, st.Dropped)
			assert.Equal(t, uint64(1), st.Received)
			sizes := 0
			for range n + entries {
				d := await(t, rec.Drops, "a drop", nil)
				if d.Reason == "too_large" {
					assert.Equal(t, huge, d.Bytes)
					sizes++
				}
			}
			assert.Equal(t, entries, sizes)
			assert.LessOrEqual(t, r.max(), limit+framing, "the largest reply the bridge read")

			// A bridge that starts (or reconnects) reads where the stream
			// ends without reading its last entry.
			xadd(t, c, b.Stream(), []byte(strings.Repeat("z", huge)), "")
			var r2 replies
			ro.Dialer = r2.dialer()
			h2, err := hub.New(hub.Options{})
			require.NoError(t, err)
			b2, err := redisbridge.New(ro, h2, opts)
			require.NoError(t, err)
			require.NoError(t, b2.Close())
			assert.Less(t, r2.max(), framing, "the largest reply a new bridge read")
		})
	}
}

// TestReadsEveryID: the reader takes every entry, whatever its id: ids
// chosen by the client that appends them, at the edges of the decimal
// arithmetic of the read script (a sequence number of 9, 19, 2^64-1, a
// millisecond part of 9).
func TestReadsEveryID(t *testing.T) {
	srv := redistest.Run(t)
	in := join(t, "A", srv.URL(), redisbridge.Options{})
	l := in.listen(t, toolsOnly)
	c := raw(t, srv.URL())
	ids := []string{"1-9", "1-10", "1-19", "1-20", "1-18446744073709551615", "2-0", "9-0", "10-0", "99-99"}
	_, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.XAdd(context.Background(), &redis.XAddArgs{Stream: in.bridge.Stream(), ID: id, Values: []any{"d", "not json"}})
		}
		return nil
	})
	require.NoError(t, err)
	xadd(t, c, in.bridge.Stream(), toolsEnvelope("p", 1, "last"), "")
	assert.Equal(t, "last", l.next(t).id)
	assert.Equal(t, cluster.Drops{Malformed: uint64(len(ids))}, in.bridge.Stats().Dropped)
}
