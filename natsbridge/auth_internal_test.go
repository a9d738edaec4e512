package natsbridge

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignVerify(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	data := []byte(`{"v":1,"o":"p","n":1,"k":"tools"}`)
	sig := newSigner(k2, "s.events").sign(data)
	assert.Len(t, sig, sigLen)
	assert.Equal(t, refSignature(k2, "s.events", data), sig)
	hdr := func(v ...string) nats.Header { return nats.Header{AuthHeader: v} }

	v := newVerifier([][]byte{k1, k2}, "s.events")
	require.NoError(t, v.verify(hdr(sig), data), "the second (older) key is accepted")
	require.NoError(t, v.verify(hdr(sig), data), "the verifier is reusable")
	assert.ErrorIs(t, v.verify(nil, data), errUnsigned)
	assert.ErrorIs(t, v.verify(nats.Header{"Other": {"x"}}, data), errUnsigned)
	assert.ErrorIs(t, v.verify(hdr(sig, sig), data), errBadSignature)
	assert.ErrorIs(t, v.verify(hdr(sig[:42]), data), errBadSignature)
	assert.ErrorIs(t, v.verify(hdr(sig+"="), data), errBadSignature)
	assert.ErrorIs(t, v.verify(hdr(sig), append(bytes.Clone(data), ' ')), errBadSignature)
	assert.ErrorIs(t, v.verify(hdr(newSigner(k3, "s.events").sign(data)), data), errBadSignature)
	assert.ErrorIs(t, v.verify(hdr(newSigner(k1, "t.events").sign(data)), data), errBadSignature)
	// A non-canonical encoding of the right MAC (the last character's two
	// unused bits set) is refused: one message, one signature.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, sig[len(sig)-1])
	require.Zero(t, i%4, "a canonical last character leaves its two low bits zero")
	alt := sig[:len(sig)-1] + alphabet[i+1:i+2]
	assert.ErrorIs(t, v.verify(hdr(alt), data), errBadSignature)
	assert.ErrorIs(t, newVerifier([][]byte{k1}, "s.events").verify(hdr(sig), data), errBadSignature)
}

// TestTrackReplay: with authentication a sequence number that is not above
// the origin's last is a replay, also across a reconnect reset (which only
// stops the next number from counting as a gap); without authentication
// every number is taken as it comes.
func TestTrackReplay(t *testing.T) {
	newB := func(auth bool) *Bridge {
		b := &Bridge{peers: make(map[string]peer), wake: make(chan struct{}, 1)}
		if auth {
			b.verifier = newVerifier([][]byte{bytes.Repeat([]byte{1}, 32)}, "s")
		}
		return b
	}
	ok := func(b *Bridge, seq uint64) bool { _, _, ok := b.track("p", seq); return ok }

	b := newB(true)
	assert.True(t, ok(b, 5), "a new origin may start anywhere")
	assert.False(t, ok(b, 5), "a duplicate")
	assert.False(t, ok(b, 3), "an older message")
	assert.True(t, ok(b, 6))
	assert.Zero(t, b.gaps.Load())
	assert.True(t, ok(b, 9))
	assert.Equal(t, uint64(2), b.gaps.Load())
	b.resetEpoch.Add(1) // a reconnect resync
	assert.False(t, ok(b, 9), "still a replay after the reset")
	assert.True(t, ok(b, 20))
	assert.Equal(t, uint64(2), b.gaps.Load(), "no gap right after the reset")
	assert.True(t, ok(b, 22))
	assert.Equal(t, uint64(3), b.gaps.Load())

	b = newB(false)
	assert.True(t, ok(b, 5))
	assert.True(t, ok(b, 5))
	assert.True(t, ok(b, 3))
	assert.True(t, ok(b, 4))
	assert.Zero(t, b.gaps.Load())
	assert.True(t, ok(b, 6))
	assert.Equal(t, uint64(1), b.gaps.Load())
	b.resetEpoch.Add(1)
	assert.True(t, ok(b, 2))
	assert.Equal(t, uint64(1), b.gaps.Load())
}
