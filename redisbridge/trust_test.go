package redisbridge_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
	"github.com/mcplisten/listen/spec"
)

var (
	keyOld   = bytes.Repeat([]byte{'o'}, cluster.MinAuthKeyBytes)
	keyNew   = bytes.Repeat([]byte{'n'}, cluster.MinAuthKeyBytes)
	keyWrong = bytes.Repeat([]byte{'w'}, cluster.MinAuthKeyBytes)
)

func authOptions(keys ...[]byte) redisbridge.Options {
	return redisbridge.Options{Options: cluster.Options{AuthKeys: keys}}
}

// signature computes an entry's "s" field as the documentation defines
// it, independently of the bridge's code: HMAC-SHA256(key, stream "\n"
// data), unpadded base64url.
func signature(key []byte, stream string, data []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(stream + "\n"))
	mac.Write(data)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// xadd appends a hand-made entry to the stream, as a peer that is no
// bridge would.
func xadd(t *testing.T, c *redis.Client, stream string, data []byte, sig string) {
	t.Helper()
	values := []any{"d", data}
	if sig != "" {
		values = append(values, "s", sig)
	}
	require.NoError(t, c.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: values}).Err())
}

// toolsEnvelope is a hand-made envelope, stamped now.
func toolsEnvelope(origin string, seq uint64, id string) []byte {
	return fmt.Appendf(nil, `{"v":1,"o":%q,"n":%d,"t":%d,"k":"tools","m":{%q:%q}}`,
		origin, seq, time.Now().UnixMilli(), idKey, id)
}

// TestAuthForgerIgnored: with AuthKeys, a Redis client without the key
// that appends entries to the stream delivers nothing: unsigned entries,
// wrong keys, a signature made for another stream or another message, a
// malformed one, forged numbers of a real instance. Each is dropped as
// unauthenticated, no gap is counted, no resync happens. A program that
// signs with the key as documented is accepted.
func TestAuthForgerIgnored(t *testing.T) {
	srv := redistest.Run(t)
	a := join(t, "A", srv.URL(), authOptions(keyOld))
	b := join(t, "B", srv.URL(), authOptions(keyOld))
	l := b.listen(t, toolsOnly)
	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "first"))
	require.NoError(t, err)
	assert.Equal(t, "first", l.next(t).id)

	stream := b.bridge.Stream()
	forger := raw(t, srv.URL())
	aID := a.bridge.ID()
	forged := []struct {
		name string
		data []byte
		sig  string
	}{
		{"unsigned", toolsEnvelope("forger", 1, "f1"), ""},
		{"unsigned, A's origin, a gap", toolsEnvelope(aID, 1000, "f2"), ""},
		{"wrong key", toolsEnvelope("forger", 2, "f3"), signature(keyWrong, stream, toolsEnvelope("forger", 2, "f3"))},
		{"other stream", toolsEnvelope("forger", 3, "f4"), signature(keyOld, "other", toolsEnvelope("forger", 3, "f4"))},
		{"not base64", toolsEnvelope("forger", 4, "f5"), strings.Repeat("!", cluster.SignatureLen)},
		{"short", toolsEnvelope("forger", 5, "f6"), "abc"},
		{"garbage", []byte("not json"), ""},
	}
	for _, f := range forged {
		xadd(t, forger, stream, f.data, f.sig)
	}
	for _, in := range []*instance{a, b} {
		for _, f := range forged {
			d := await(t, in.rec.Drops, in.name+" dropping "+f.name, nil)
			assert.Equal(t, "unauthenticated", d.Reason, "%s: %s", in.name, f.name)
		}
	}
	good := toolsEnvelope("other-program", 1, "signed")
	xadd(t, forger, stream, good, signature(keyOld, stream, good))
	assert.Equal(t, "signed", l.next(t).id)
	st := b.bridge.Stats()
	assert.Equal(t, uint64(len(forged)), st.Dropped.Unauthenticated)
	assert.Equal(t, uint64(len(forged)), st.Dropped.Total())
	assert.Zero(t, st.Gaps)
	assert.Zero(t, st.Resyncs)
}

// TestAuthReplay: a Redis client without the key reads signed entries and
// appends them again, verbatim. A running instance drops them (their
// numbers are not above their origin's last); an instance started after
// the capture (a restarted one, with no memory of them) drops them too
// (stamped before it started), resynchronising instead; neither delivers
// a replayed event, and genuine events go on reaching both.
func TestAuthReplay(t *testing.T) {
	srv := redistest.Run(t)
	a := join(t, "A", srv.URL(), authOptions(keyOld))
	b := join(t, "B", srv.URL(), authOptions(keyOld))
	lb := b.listen(t, toolsOnly)
	for i := range 5 {
		_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), fmt.Sprint("old-", i)))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("old-", i), lb.next(t).id)
	}
	spy := raw(t, srv.URL())
	captured, err := spy.XRange(context.Background(), a.bridge.Stream(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, captured, 5)

	time.Sleep(2 * time.Millisecond) // the restarted instance's clock passes the stamps
	c := join(t, "C", srv.URL(), authOptions(keyOld))
	lc := c.listen(t, toolsOnly)
	for _, e := range captured {
		xadd(t, spy, a.bridge.Stream(), []byte(e.Values["d"].(string)), e.Values["s"].(string))
	}
	for _, in := range []*instance{b, c} {
		for range captured {
			d := await(t, in.rec.Drops, in.name+" dropping a replay", nil)
			assert.Equal(t, "replayed", d.Reason)
		}
	}
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "new"))
	require.NoError(t, err)
	assert.Equal(t, "new", lb.next(t).id, "B: no replayed event, no resync")
	for _, n := range lc.until(t, "new") {
		assert.True(t, n.id == "" || n.id == "new", "C gets resync hints, no replayed event: %q", n.id)
	}
	assert.Equal(t, uint64(5), b.bridge.Stats().Dropped.Replayed)
	assert.Equal(t, uint64(5), c.bridge.Stats().Dropped.Replayed)
	assert.Zero(t, b.bridge.Stats().Resyncs)
	assert.Positive(t, c.bridge.Stats().Resyncs)
}

// TestAuthKeyRotation: instances at the steps of a key rotation talk:
// [old], [old, new] and [new, old] accept each other; [new] accepts the
// last two; an instance without keys accepts signed entries, but its own
// are dropped by every instance with keys.
func TestAuthKeyRotation(t *testing.T) {
	srv := redistest.Run(t)
	a := join(t, "A", srv.URL(), authOptions(keyOld))
	c := join(t, "C", srv.URL(), authOptions(keyOld, keyNew))
	b := join(t, "B", srv.URL(), authOptions(keyNew, keyOld))
	e := join(t, "E", srv.URL(), authOptions(keyNew))
	d := join(t, "D", srv.URL(), redisbridge.Options{})
	ins := []*instance{a, b, c, d, e}
	accepts := map[*instance][]*instance{a: {b, c, d}, c: {a, b, d}, b: {c, d, e}, e: {b, c, d}, d: {}}
	ls := map[*instance]*listener{}
	for _, in := range ins {
		ls[in] = in.listen(t, toolsOnly)
	}
	for _, from := range ins {
		for _, id := range []string{"from-", "fence-"} {
			_, err := from.hub.Publish(tagged(listen.ToolsListChanged(), id+from.name))
			require.NoError(t, err)
		}
	}
	for _, to := range ins {
		accepted := func(from *instance) bool {
			ok := from == to
			for _, x := range accepts[from] {
				ok = ok || x == to
			}
			return ok
		}
		var want []string
		refused := 0
		for _, from := range ins {
			if accepted(from) {
				want = append(want, "fence-"+from.name)
			} else {
				refused += 2
			}
		}
		var got []string
		for !hasAll(got, want...) {
			got = append(got, ls[to].next(t).id)
		}
		for range refused { // the refused entries were seen, and dropped
			d := await(t, to.rec.Drops, to.name+" dropping an entry", nil)
			assert.Equal(t, "unauthenticated", d.Reason)
		}
		assert.Empty(t, ls[to].notes, "%s: nothing else", to.name)
		for _, from := range ins {
			assert.Equal(t, accepted(from), hasAll(got, "from-"+from.name), "%s receiving from %s: %v", to.name, from.name, got)
		}
	}
}

// TestReservedMetaStripped: a peer that is no bridge appends an event
// whose metadata and params _meta carry keys the MCP specification
// reserves: it reaches the listener without them, the rest intact, and
// counts as sanitised.
func TestReservedMetaStripped(t *testing.T) {
	srv := redistest.Run(t)
	b := join(t, "B", srv.URL(), redisbridge.Options{})
	_, s, err := b.hub.Open(context.Background(), nil, listen.Filter{spec.KeyResourceSubscriptions: []any{watched}})
	require.NoError(t, err)
	defer s.Close(nil)
	data := fmt.Appendf(nil, `{"v":1,"o":"forger","n":1,"t":%d,"k":"updated","u":%q,`+
		`"p":{"extra":1,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t9"},"com.example/p":"kept"}},`+
		`"m":{"io.modelcontextprotocol/serverInfo":{"name":"evil"},"dev.mcp/x":1,"com.example/id":"forged"}}`,
		time.Now().UnixMilli(), watched)
	xadd(t, raw(t, srv.URL()), b.bridge.Stream(), data, "")
	ev, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, []string{"com.example/id"}, keys(ev.Metadata))
	assert.Equal(t, []string{"com.example/p"}, keys(ev.Params["_meta"].(map[string]any)))
	assert.Contains(t, ev.Params, "extra")
	assert.Equal(t, uint64(1), b.bridge.Stats().Sanitised)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// aclFile is the Redis ACL the README shows.
const aclFile = "testdata/redis-users.acl"

// TestACLKeepsOthersOut runs redis-server with the README's ACL: the
// instances (user mcp-instance) talk over the stream; another user of the
// same Redis can neither append to it nor read it (NOPERM), so the
// bridges never see its entries; the default user is off.
func TestACLKeepsOthersOut(t *testing.T) {
	acl, err := filepath.Abs(aclFile)
	require.NoError(t, err)
	srv := redistest.Run(t, "--aclfile", acl)
	instance := "redis://mcp-instance:instance-secret@" + srv.Addr
	a := join(t, "A", instance, redisbridge.Options{})
	b := join(t, "B", instance, redisbridge.Options{})
	l := b.listen(t, listen.Filter{spec.KeyResourceSubscriptions: []any{watched}})

	other := raw(t, "redis://other-service:other-secret@"+srv.Addr)
	ctx := context.Background()
	forged := fmt.Appendf(nil, `{"v":1,"o":"forger","n":1,"t":%d,"k":"updated","u":%q}`, time.Now().UnixMilli(), watched)
	err = other.XAdd(ctx, &redis.XAddArgs{Stream: b.bridge.Stream(), Values: []any{"d", forged}}).Err()
	assert.ErrorContains(t, err, "NOPERM")
	err = other.XRead(ctx, &redis.XReadArgs{Streams: []string{b.bridge.Stream(), "0"}, Block: -1}).Err()
	assert.ErrorContains(t, err, "NOPERM")
	require.NoError(t, other.Set(ctx, "other:x", "1", 0).Err(), "its own keys are its own")
	assert.ErrorContains(t, raw(t, srv.URL()).Ping(ctx).Err(), "", "the default user is off")

	_, err = a.hub.Publish(tagged(listen.ResourceUpdated(watched), "genuine"))
	require.NoError(t, err)
	assert.Equal(t, "genuine", l.next(t).id)
	st := b.bridge.Stats()
	assert.Equal(t, uint64(1), st.Received)
	assert.Zero(t, st.Dropped.Total())
}

// TestREADMEShowsACL: the ACL in the README is the one TestACLKeepsOthersOut
// runs.
func TestREADMEShowsACL(t *testing.T) {
	acl, err := os.ReadFile(aclFile)
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), string(acl), "README.md must show %s verbatim", aclFile)
}
