package natsbridge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"

	"github.com/nats-io/nats.go"
)

// AuthHeader is the NATS message header that carries an envelope's
// signature when Options.AuthKeys is set: the HMAC-SHA256, under the
// signing key, of the subject, a newline ("\n") and the exact bytes of the
// message's data (the envelope), encoded as unpadded base64url (43
// characters). Another program may publish on the subject by computing the
// same value.
const AuthHeader = "Mcplisten-Hmac-Sha256"

// Limits of Options.AuthKeys.
const (
	// MinAuthKeyBytes is the shortest key New accepts: 32 bytes, the size
	// of the HMAC-SHA256 output. Use random bytes (crypto/rand, or
	// `openssl rand 32`), not a password.
	MinAuthKeyBytes = 32
	// MaxAuthKeys is the most keys New accepts. A message that matches no
	// key costs the receiver one HMAC per key.
	MaxAuthKeys = 8
)

// sigLen is the length of AuthHeader's value.
var sigLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// authOverhead is what the signature header adds to a message's size as
// the NATS server counts it against its max_payload.
var authOverhead = len("NATS/1.0\r\n") + len(AuthHeader) + len(": ") + sigLen + len("\r\n\r\n")

// Why a message failed authentication (wrapped in DropInfo.Err).
var (
	errUnsigned     = errors.New("unsigned message")
	errBadSignature = errors.New("signature matches no accepted key")
)

// macInput is the part of the HMAC input before the message data: the
// subject and a newline. A key shared by several subjects (prefixes) thus
// does not let a message move between them.
func macInput(subject string) []byte { return []byte(subject + "\n") }

// signer signs a bridge's messages with its first key. Not safe for
// concurrent use: the bridge calls it under its publish lock.
type signer struct {
	mac    hash.Hash
	prefix []byte
	sum    []byte // the last HMAC
	enc    []byte // its encoding
}

func newSigner(key []byte, subject string) *signer {
	return &signer{mac: hmac.New(sha256.New, key), prefix: macInput(subject),
		sum: make([]byte, 0, sha256.Size), enc: make([]byte, 0, sigLen)}
}

// sign returns the value of AuthHeader for data.
func (s *signer) sign(data []byte) string {
	s.mac.Reset()
	s.mac.Write(s.prefix)
	s.mac.Write(data)
	s.sum = s.mac.Sum(s.sum[:0])
	s.enc = base64.RawURLEncoding.AppendEncode(s.enc[:0], s.sum)
	return string(s.enc)
}

// verifier checks the signatures of received messages against every
// accepted key. Not safe for concurrent use: the bridge calls it from its
// delivery goroutine only.
type verifier struct {
	macs   []hash.Hash // one per accepted key, in Options.AuthKeys order
	prefix []byte
	sum    []byte
}

func newVerifier(keys [][]byte, subject string) *verifier {
	v := &verifier{prefix: macInput(subject), sum: make([]byte, 0, sha256.Size)}
	for _, k := range keys {
		v.macs = append(v.macs, hmac.New(sha256.New, k))
	}
	return v
}

// verify reports, with an error wrapping errUnsigned or errBadSignature,
// why h does not carry a valid signature of data; nil when it does. It
// takes at most one HMAC per key, and compares in constant time.
func (v *verifier) verify(h nats.Header, data []byte) error {
	vals := h[AuthHeader]
	switch {
	case len(vals) == 0:
		return errUnsigned
	case len(vals) > 1 || len(vals[0]) != sigLen:
		return errBadSignature
	}
	var got [sha256.Size]byte
	if n, err := base64.RawURLEncoding.Strict().Decode(got[:], []byte(vals[0])); err != nil || n != len(got) {
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
