package cluster

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignVerify(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	data := []byte(`{"v":1,"o":"p","n":1,"k":"tools"}`)
	sig := newSigner(k2, "s.events").sign(data)
	assert.Len(t, sig, SignatureLen)
	assert.Equal(t, refSignature(k2, "s.events", data), sig)
	hdr := func(v string) string { return v }

	v := newVerifier([][]byte{k1, k2}, "s.events")
	require.NoError(t, v.verify(hdr(sig), data), "the second (older) key is accepted")
	require.NoError(t, v.verify(hdr(sig), data), "the verifier is reusable")
	assert.ErrorIs(t, v.verify("", data), errUnsigned)
	assert.ErrorIs(t, v.verify(sig+sig, data), errBadSignature)
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
// stops the next number from counting as a gap); a message stamped before
// the node's floor (its start) is held back; without authentication every
// number and stamp is taken as it comes.
func TestTrackReplay(t *testing.T) {
	const floor = 1_000_000
	newN := func(auth bool) *Node {
		n := &Node{peers: make(map[string]peer), floor: floor}
		if auth {
			n.verifier = newVerifier([][]byte{bytes.Repeat([]byte{1}, 32)}, "s")
		}
		return n
	}
	verdictOf := func(n *Node, origin string, seq uint64, stamp int64) verdict {
		_, _, v := n.track(origin, seq, stamp)
		return v
	}
	ok := func(n *Node, seq uint64) bool { return verdictOf(n, "p", seq, floor+int64(seq)) == accepted }

	n := newN(true)
	assert.True(t, ok(n, 5), "a new origin may start anywhere")
	assert.False(t, ok(n, 5), "a duplicate")
	assert.False(t, ok(n, 3), "an older message")
	assert.True(t, ok(n, 6))
	assert.Zero(t, n.gaps.Load())
	assert.True(t, ok(n, 9))
	assert.Equal(t, uint64(2), n.gaps.Load())
	n.resetEpoch.Add(1) // a reconnect resync
	assert.False(t, ok(n, 9), "still a replay after the reset")
	assert.True(t, ok(n, 20))
	assert.Equal(t, uint64(2), n.gaps.Load(), "no gap right after the reset")
	assert.True(t, ok(n, 22))
	assert.Equal(t, uint64(3), n.gaps.Load())

	// Stamped before the node started: held back, whatever the origin.
	assert.Equal(t, heldBack, verdictOf(n, "q", 7, floor-1))
	assert.Equal(t, heldBack, verdictOf(n, "q", 8, floor-1))
	assert.Equal(t, heldBack, verdictOf(n, "p", 30, floor-1), "a known origin's too")
	assert.Equal(t, accepted, verdictOf(n, "q", 8, floor+1))
	assert.Equal(t, accepted, verdictOf(n, "r", 1, floor), "stamped at the floor: after the start")

	n = newN(false)
	assert.True(t, ok(n, 5))
	assert.True(t, ok(n, 5))
	assert.True(t, ok(n, 3))
	assert.True(t, ok(n, 4))
	assert.Zero(t, n.gaps.Load())
	assert.True(t, ok(n, 6))
	assert.Equal(t, uint64(1), n.gaps.Load())
	n.resetEpoch.Add(1)
	assert.True(t, ok(n, 2))
	assert.Equal(t, uint64(1), n.gaps.Load())
	assert.Equal(t, accepted, verdictOf(n, "q", 7, floor-1), "without keys stamps count for nothing")
}

// TestTrackForgetsPastMaxPeers: past maxPeers origins the memory is reset,
// and the floor moves to that moment, so that copies of messages from
// before it are still held back.
func TestTrackForgetsPastMaxPeers(t *testing.T) {
	n := &Node{peers: make(map[string]peer), floor: 1,
		verifier: newVerifier([][]byte{bytes.Repeat([]byte{1}, 32)}, "s")}
	for i := range maxPeers {
		_, _, v := n.track(strconv.Itoa(i), 1, 2)
		require.Equal(t, accepted, v)
	}
	_, _, v := n.track("one more", 1, 2)
	assert.Equal(t, heldBack, v, "stamped before the reset")
	assert.Empty(t, n.peers)
	assert.Greater(t, n.floor, int64(2))
	_, _, v = n.track("1", 1, 2)
	assert.Equal(t, heldBack, v, "a forgotten origin's old copy")
	_, _, v = n.track("0", 1, n.floor)
	assert.Equal(t, accepted, v)
}
