package natsbridge_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/natsbridge"
)

var (
	keyOld   = bytes.Repeat([]byte{'o'}, cluster.MinAuthKeyBytes)
	keyNew   = bytes.Repeat([]byte{'n'}, cluster.MinAuthKeyBytes)
	keyWrong = bytes.Repeat([]byte{'w'}, cluster.MinAuthKeyBytes)
)

func authOptions(keys ...[]byte) natsbridge.Options {
	return natsbridge.Options{Options: cluster.Options{AuthKeys: keys}}
}

// signature computes the AuthHeader value as the documentation defines it,
// independently of the bridge's code: HMAC-SHA256(key, subject "\n" data),
// unpadded base64url.
func signature(key []byte, subject string, data []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(subject + "\n"))
	mac.Write(data)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// publishRaw publishes data on subject with the given AuthHeader values.
func publishRaw(t *testing.T, nc *nats.Conn, subject string, data []byte, sigs ...string) {
	t.Helper()
	m := &nats.Msg{Subject: subject, Data: data}
	if len(sigs) > 0 {
		m.Header = nats.Header{natsbridge.AuthHeader: sigs}
	}
	require.NoError(t, nc.PublishMsg(m))
}

// toolsEnvelope is a hand-made envelope, stamped now.
func toolsEnvelope(origin string, seq uint64, id string) []byte {
	return fmt.Appendf(nil, `{"v":1,"o":%q,"n":%d,"t":%d,"k":"tools","m":{%q:%q}}`,
		origin, seq, time.Now().UnixMilli(), idKey, id)
}

// TestAuthForgerIgnored: with AuthKeys, a peer without the key (a raw NATS
// connection publishing hand-made envelopes) delivers nothing, whatever it
// sends: unsigned messages, wrong keys, malformed signatures, a signature
// made for another subject, or forged sequence numbers and sync messages
// of a real instance. Each is dropped as unauthenticated before it is
// decoded, no gap is counted and no resync happens. A program that signs
// with the key as documented is accepted.
func TestAuthForgerIgnored(t *testing.T) {
	ns := startNATS(t, 0)
	a := newInstance(t, "A", connect(t, ns.ClientURL()), authOptions(keyOld))
	b := newInstance(t, "B", connect(t, ns.ClientURL()), authOptions(keyOld))
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)
	subject := b.bridge.Subject()

	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "first")) // B now knows A's sequence number
	require.NoError(t, err)
	assert.Equal(t, "first", s.next(t).id)

	forger := connect(t, ns.ClientURL())
	aID := a.bridge.ID()
	forged := []struct {
		name string
		data []byte
		sigs []string
	}{
		{"unsigned", toolsEnvelope("forger", 1, "f-unsigned"), nil},
		{"unsigned, A's origin, a gap", toolsEnvelope(aID, 1000, "f-gap"), nil},
		{"unsigned sync, A's origin", fmt.Appendf(nil, `{"v":1,"o":%q,"n":5000,"k":"sync"}`, aID), nil},
		{"wrong key", toolsEnvelope("forger", 2, "f-wrong"), []string{signature(keyWrong, subject, toolsEnvelope("forger", 2, "f-wrong"))}},
		{"wrong key, A's origin", toolsEnvelope(aID, 2000, "f-wrong-a"), []string{signature(keyWrong, subject, toolsEnvelope(aID, 2000, "f-wrong-a"))}},
		{"other subject", toolsEnvelope("forger", 3, "f-subj"), []string{signature(keyOld, "other.events", toolsEnvelope("forger", 3, "f-subj"))}},
		{"another message's signature", toolsEnvelope("forger", 4, "f-swap"), []string{signature(keyOld, subject, toolsEnvelope("forger", 4, "other"))}},
		{"empty signature", toolsEnvelope("forger", 5, "f-empty"), []string{""}},
		{"not base64", toolsEnvelope("forger", 6, "f-b64"), []string{strings.Repeat("!", 43)}},
		{"short", toolsEnvelope("forger", 7, "f-short"), []string{"abc"}},
		{"two values", toolsEnvelope("forger", 8, "f-two"), []string{
			signature(keyOld, subject, toolsEnvelope("forger", 8, "f-two")), signature(keyOld, subject, toolsEnvelope("forger", 8, "f-two"))}},
		{"garbage", []byte("not json"), nil},
	}
	for _, f := range forged {
		publishRaw(t, forger, subject, f.data, f.sigs...)
	}
	require.NoError(t, forger.Flush())
	for _, in := range []*instance{a, b} {
		for _, f := range forged {
			d := await(t, in.rec.Drops, in.name+" dropping "+f.name, nil)
			assert.Equal(t, "unauthenticated", d.Reason, "%s: %s", in.name, f.name)
			assert.Error(t, d.Err)
		}
	}

	// A key holder's program, signing as documented, is accepted.
	good := toolsEnvelope("other-program", 1, "signed")
	publishRaw(t, forger, subject, good, signature(keyOld, subject, good))
	assert.Equal(t, "signed", s.next(t).id)

	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "fence"))
	require.NoError(t, err)
	assert.Equal(t, "fence", s.next(t).id, "nothing forged came before the fence")
	st := b.bridge.Stats()
	assert.Equal(t, uint64(len(forged)), st.Dropped.Unauthenticated)
	assert.Equal(t, uint64(len(forged)), st.Dropped.Total())
	assert.Equal(t, uint64(3), st.Received)
	assert.Zero(t, st.Gaps, "forged sequence numbers count for nothing")
	assert.Zero(t, st.Resyncs)
	assert.Empty(t, b.rec.Resyncs)
	assert.Zero(t, a.bridge.Stats().Gaps)
}

// TestAuthReplayDropped: a peer without the key that can read the subject
// captures a signed message and publishes it again, verbatim: listeners
// get the event once, and the replay does not move the origin's sequence
// number back (which would make the next genuine message look like a gap
// and cause a resync).
func TestAuthReplayDropped(t *testing.T) {
	ns := startNATS(t, 0)
	a := newInstance(t, "A", connect(t, ns.ClientURL()), authOptions(keyOld))
	b := newInstance(t, "B", connect(t, ns.ClientURL()), authOptions(keyOld))
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)

	spy := connect(t, ns.ClientURL())
	captured := make(chan *nats.Msg, 16)
	sub, err := spy.ChanSubscribe(b.bridge.Subject(), captured)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, spy.Flush())

	for _, id := range []string{"e1", "e2"} {
		_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), id))
		require.NoError(t, err)
		assert.Equal(t, id, s.next(t).id)
	}
	e1 := await(t, captured, "the capture of e1", nil)
	require.NotEmpty(t, e1.Header.Get(natsbridge.AuthHeader))
	require.NoError(t, spy.PublishMsg(&nats.Msg{Subject: e1.Subject, Header: e1.Header, Data: e1.Data}))
	require.NoError(t, spy.Flush())
	d := await(t, b.rec.Drops, "B dropping the replay", nil)
	assert.Equal(t, "replayed", d.Reason)

	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "e3"))
	require.NoError(t, err)
	assert.Equal(t, "e3", s.next(t).id, "the replay was not delivered")
	st := b.bridge.Stats()
	assert.Equal(t, uint64(1), st.Dropped.Replayed)
	assert.Equal(t, uint64(3), st.Received)
	assert.Zero(t, st.Gaps)
	assert.Zero(t, st.Resyncs)
}

// TestAuthReplayAfterRestart: a peer without the key captures five signed
// messages, then publishes them again, verbatim, to an instance started
// after them (a restarted instance, with the same key, that has no memory
// of their origin): none reaches its listener. Each is dropped as replayed
// (stamped before the instance started); the instance resynchronises its
// listeners instead (such a message might be a genuine one from an
// instance whose clock is behind), so the listener gets untagged hints
// only. A genuine message published afterwards is delivered.
func TestAuthReplayAfterRestart(t *testing.T) {
	ns := startNATS(t, 0)
	a := newInstance(t, "A", connect(t, ns.ClientURL()), authOptions(keyOld))
	spy := connect(t, ns.ClientURL())
	captured := make(chan *nats.Msg, 16)
	sub, err := spy.ChanSubscribe(a.bridge.Subject(), captured)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, spy.Flush())
	var msgs []*nats.Msg
	for i := range 5 {
		_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), fmt.Sprint("old-", i)))
		require.NoError(t, err)
		msgs = append(msgs, await(t, captured, "a capture", nil))
	}

	// Make sure the restarted instance's clock has passed the stamps.
	time.Sleep(2 * time.Millisecond)
	c := newInstance(t, "C", connect(t, ns.ClientURL()), authOptions(keyOld))
	s := c.listen(t, "C-tools", `{"toolsListChanged":true}`)
	for _, m := range msgs {
		require.NoError(t, spy.PublishMsg(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}))
	}
	require.NoError(t, spy.Flush())
	for range msgs {
		d := await(t, c.rec.Drops, "C dropping a replay", nil)
		assert.Equal(t, "replayed", d.Reason)
	}
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "new"))
	require.NoError(t, err)
	got := s.until(t, "new")
	for _, n := range got[:len(got)-1] {
		assert.Empty(t, n.id, "only resync hints before the genuine event, no replayed one")
	}
	st := c.bridge.Stats()
	assert.Equal(t, uint64(5), st.Dropped.Replayed)
	assert.Equal(t, uint64(1), st.Received)
	assert.Positive(t, st.Resyncs)
}

// TestAuthKeyRotation: instances at every step of a key rotation keep
// talking: A has only the old key (before), C signs with the old key and
// accepts the new one (step 1), B signs with the new key and accepts the
// old one (step 2), E has only the new key (step 3). D has no keys (a
// bridge without authentication): it accepts signed messages (the envelope
// is the same version 1; the signature is a NATS header it ignores), but
// its own unsigned messages are dropped by every instance with keys.
func TestAuthKeyRotation(t *testing.T) {
	ns := startNATS(t, 0)
	a := newInstance(t, "A", connect(t, ns.ClientURL()), authOptions(keyOld))
	c := newInstance(t, "C", connect(t, ns.ClientURL()), authOptions(keyOld, keyNew))
	b := newInstance(t, "B", connect(t, ns.ClientURL()), authOptions(keyNew, keyOld))
	e := newInstance(t, "E", connect(t, ns.ClientURL()), authOptions(keyNew))
	d := newInstance(t, "D", connect(t, ns.ClientURL()), natsOptions())
	ins := []*instance{a, b, c, d, e}
	streams := map[*instance]*stream{}
	for _, in := range ins {
		streams[in] = in.listen(t, in.name+"-tools", `{"toolsListChanged":true}`)
	}
	// Who accepts whose messages.
	accepts := map[*instance][]*instance{
		a: {b, c, d}, // signed with old
		c: {a, b, d}, // signed with old
		b: {c, d, e}, // signed with new
		e: {b, c, d}, // signed with new
		d: {},        // unsigned
	}
	received := map[*instance]uint64{}
	unauth := map[*instance]uint64{}
	for _, from := range ins {
		id := "from-" + from.name
		_, err := from.hub.Publish(tagged(listen.ToolsListChanged(), id))
		require.NoError(t, err)
		assert.Equal(t, id, streams[from].next(t).id)
		for _, to := range ins {
			if to == from {
				continue
			}
			if slices.Contains(accepts[from], to) {
				assert.Equal(t, id, streams[to].next(t).id, "%s to %s", from.name, to.name)
				received[to]++
				continue
			}
			dr := await(t, to.rec.Drops, to.name+" dropping "+id, nil)
			assert.Equal(t, "unauthenticated", dr.Reason, "%s to %s", from.name, to.name)
			unauth[to]++
		}
	}
	for _, in := range ins {
		st := in.bridge.Stats()
		assert.Equal(t, received[in], st.Received, in.name)
		assert.Equal(t, unauth[in], st.Dropped.Unauthenticated, in.name)
		assert.Equal(t, unauth[in], st.Dropped.Total(), in.name)
		assert.Zero(t, st.Gaps, in.name)
		assert.Empty(t, streams[in].notes, in.name)
	}
	assert.Equal(t, uint64(4), received[d], "the instance without keys accepts every signed message")
}

// TestAuthSizeLimit: with AuthKeys, Publish leaves room for the signature
// header under the server's max_payload: an envelope that fits without
// the header but not with it is refused (ErrTooLarge) instead of failing
// in NATS.
func TestAuthSizeLimit(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 2048})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe))
	t.Cleanup(func() { stopNATS(ns) })
	nc := connect(t, ns.ClientURL())
	co := cluster.Options{AuthKeys: [][]byte{keyOld}}
	rec := record(&co)
	br, err := natsbridge.New(nc, newHub(t, nil), natsbridge.Options{Options: co})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, br.Close()) })

	// The envelope: {"v":1,"o":"<22>","n":<seq>,"t":<ms>,"k":"tools","m":{"pad":"..."}},
	// counted with a 20-digit sequence number and a 20-digit timestamp.
	fixed := len(`{"v":1,"o":"`) + 22 + len(`","n":`) + 20 + len(`,"t":`) + 20 + len(`,"k":"tools","m":{"pad":""}}`)
	pad := func(n int) listen.Event {
		return listen.ToolsListChanged().WithMetadata(map[string]any{"pad": strings.Repeat("x", n)})
	}
	_, err = br.Hub().Publish(pad(2048 - fixed)) // fits max_payload without the header
	assert.ErrorIs(t, err, cluster.ErrTooLarge)
	_, err = br.Hub().Publish(pad(2048 - fixed - 80)) // the header is 80 bytes
	require.NoError(t, err)
	out := await(t, rec.Outs, "the publication", nil)
	assert.NoError(t, out.Err)
	assert.Zero(t, br.Stats().PublishErrors)
}

// TestAuthNeedsHeaders: New refuses AuthKeys on a server without message
// headers, where every signed publication would fail.
func TestAuthNeedsHeaders(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, NoHeaderSupport: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe))
	t.Cleanup(func() { stopNATS(ns) })
	nc := connect(t, ns.ClientURL())
	require.False(t, nc.HeadersSupported())
	_, err = natsbridge.New(nc, newHub(t, nil), authOptions(keyOld))
	assert.ErrorIs(t, err, nats.ErrHeadersNotSupported)
	br, err := natsbridge.New(nc, newHub(t, nil), natsOptions())
	require.NoError(t, err, "without AuthKeys headers are not needed")
	require.NoError(t, br.Close())
}

// TestForgedFloodLogsBounded: a peer without the key publishes 2,000
// forged messages. The instance drops and counts every one (with their
// bytes), delivers the genuine event that follows, and its Logger writes
// one drop line for the flood, not one per message.
func TestForgedFloodLogsBounded(t *testing.T) {
	const forged = 2000
	ns := startNATS(t, 0)
	var logs logBuffer
	opts := authOptions(keyOld)
	opts.Logger = logs.Logger(slog.LevelInfo)
	opts.OnDrop = func(cluster.DropInfo) {} // the logger alone
	b := newInstance(t, "B", connect(t, ns.ClientURL()), opts)
	aOpts := authOptions(keyOld)
	aOpts.OnDrop = func(cluster.DropInfo) {} // A receives the flood too
	a := newInstance(t, "A", connect(t, ns.ClientURL()), aOpts)
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)

	raw := connect(t, ns.ClientURL())
	size := 0
	for i := range forged {
		env := toolsEnvelope("forger", uint64(i+1), "forged")
		size += len(env)
		require.NoError(t, raw.Publish(b.bridge.Subject(), env))
	}
	require.NoError(t, raw.Flush())
	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "genuine"))
	require.NoError(t, err)
	assert.Equal(t, "genuine", s.next(t).id, "nothing forged reaches the listener")

	st := b.bridge.Stats()
	assert.Equal(t, uint64(forged), st.Dropped.Unauthenticated)
	assert.Equal(t, uint64(size), st.DroppedBytes)
	assert.Equal(t, 1, strings.Count(logs.String(), `msg="cluster drop`), "one drop line at once, the rest summed later:\n%.500s", logs.String())
}
