package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
)

// Limits of Options.AuthKeys.
const (
	// MinAuthKeyBytes is the shortest key NewNode accepts: 32 bytes, the
	// size of the HMAC-SHA256 output. Use random bytes (crypto/rand, or
	// `openssl rand 32`), not a password.
	MinAuthKeyBytes = 32
	// maxAuthKeys is the most keys NewNode accepts. A message that matches
	// no key costs the receiver one HMAC per key.
	maxAuthKeys = 8
)

// SignatureLen is the length of a Message's Sig: an HMAC-SHA256 (32
// bytes) in unpadded base64url.
const SignatureLen = (sha256.Size*8 + 5) / 6

// Why a message failed authentication (wrapped in DropInfo.Err).
var (
	errUnsigned     = errors.New("unsigned message")
	errBadSignature = errors.New("signature matches no accepted key")
)

// macInput is the part of the HMAC input before the message data: the
// scope (the subject or stream the message travels on) and a newline. A
// key shared by several scopes thus does not let a message move between
// them.
func macInput(scope string) []byte { return []byte(scope + "\n") }

// signer signs a node's messages with its first key. Not safe for
// concurrent use: the node calls it under its publish lock.
type signer struct {
	mac    hash.Hash
	prefix []byte
	sum    []byte // the last HMAC
	enc    []byte // its encoding
}

func newSigner(key []byte, scope string) *signer {
	return &signer{mac: hmac.New(sha256.New, key), prefix: macInput(scope),
		sum: make([]byte, 0, sha256.Size), enc: make([]byte, 0, SignatureLen)}
}

// sign returns the signature of data.
func (s *signer) sign(data []byte) string {
	s.mac.Reset()
	s.mac.Write(s.prefix)
	s.mac.Write(data)
	s.sum = s.mac.Sum(s.sum[:0])
	s.enc = base64.RawURLEncoding.AppendEncode(s.enc[:0], s.sum)
	return string(s.enc)
}

// verifier checks the signatures of received messages against every
// accepted key. Not safe for concurrent use: a node calls it from its
// transport's delivery goroutine only.
type verifier struct {
	macs   []hash.Hash // one per accepted key, in Options.AuthKeys order
	prefix []byte
	sum    []byte
}

func newVerifier(keys [][]byte, scope string) *verifier {
	v := &verifier{prefix: macInput(scope), sum: make([]byte, 0, sha256.Size)}
	for _, k := range keys {
		v.macs = append(v.macs, hmac.New(sha256.New, k))
	}
	return v
}

// verify reports, with an error wrapping errUnsigned or errBadSignature,
// why sig is not a valid signature of data; nil when it is. It takes at
// most one HMAC per key, and compares in constant time.
func (v *verifier) verify(sig string, data []byte) error {
	switch {
	case sig == "":
		return errUnsigned
	case len(sig) != SignatureLen:
		return errBadSignature
	}
	var got [sha256.Size]byte
	if n, err := base64.RawURLEncoding.Strict().Decode(got[:], []byte(sig)); err != nil || n != len(got) {
		return errBadSignature
	}
	for _, mac := range v.macs {
		mac.Reset()
		mac.Write(v.prefix)
		mac.Write(data)
		v.sum = mac.Sum(v.sum[:0])
		if hmac.Equal(v.sum, got[:]) {
			return nil
		}
	}
	return errBadSignature
}
