package natsbridge

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// benchEnvelopes are typical envelopes: a list change (the smallest), a
// resource update with some metadata, and a 4 KiB extension event.
func benchEnvelopes(b *testing.B) []struct {
	name string
	data []byte
} {
	enc := func(ev listen.Event) []byte {
		body, err := appendBody(nil, ev)
		if err != nil {
			b.Fatal(err)
		}
		return append(strconv.AppendUint(envelopeHead("Jlbujq-OQ2uZ1d7uP6r8dA"), 12345, 10), body...)
	}
	return []struct {
		name string
		data []byte
	}{
		{"tools", enc(listen.ToolsListChanged())},
		{"updated", enc(listen.ResourceUpdated("file:///project/src/main.go").
			WithMetadata(map[string]any{"com.example/rev": 42, "com.example/by": "alice@example.com", "com.example/at": "2026-12-01T15:18:00Z"}).
			WithParams(map[string]any{"title": "main.go"}))},
		{"ext4k", enc(listen.ExtensionEvent("com.example/tasks", listen.Filter{"taskIds": []any{"t1"}},
			map[string]any{"status": "working", "log": string(bytes.Repeat([]byte("x"), 4000))}))},
	}
}

var benchKeys = [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)}

// BenchmarkAuthSign is the signing cost per published event: the HMAC
// and its base64 encoding.
func BenchmarkAuthSign(b *testing.B) {
	for _, e := range benchEnvelopes(b) {
		b.Run(fmt.Sprintf("%s-%dB", e.name, len(e.data)), func(b *testing.B) {
			s := newSigner(benchKeys[0], "mcp.listen.events")
			b.SetBytes(int64(len(e.data)))
			b.ReportAllocs()
			cpu0, ok := processCPU()
			n := 0
			for b.Loop() {
				_ = s.sign(e.data)
				n++
			}
			reportCPUPerOp(b, float64(cpu0.Nanoseconds()), ok, n)
		})
	}
}

// BenchmarkAuthVerify is the verification cost per received message: with
// the signing key first in the list (ok), during a rotation with the
// signing key second (rotated: two HMACs), and for a message signed with
// no accepted key (forged: one HMAC per key, then the drop).
func BenchmarkAuthVerify(b *testing.B) {
	for _, e := range benchEnvelopes(b) {
		for _, c := range []struct {
			name string
			key  []byte
			keys [][]byte
		}{
			{"ok", benchKeys[0], benchKeys[:1]},
			{"rotated", benchKeys[1], benchKeys},
			{"forged", bytes.Repeat([]byte{9}, 32), benchKeys},
		} {
			b.Run(fmt.Sprintf("%s-%dB/%s", e.name, len(e.data), c.name), func(b *testing.B) {
				h := nats.Header{AuthHeader: {newSigner(c.key, "mcp.listen.events").sign(e.data)}}
				v := newVerifier(c.keys, "mcp.listen.events")
				want := c.name != "forged"
				b.SetBytes(int64(len(e.data)))
				b.ReportAllocs()
				cpu0, ok := processCPU()
				n := 0
				for b.Loop() {
					if err := v.verify(h, e.data); (err == nil) != want {
						b.Fatal(err)
					}
					n++
				}
				reportCPUPerOp(b, float64(cpu0.Nanoseconds()), ok, n)
			})
		}
	}
}

// BenchmarkReceive is a bridge's cost per received message, without and
// with authentication: nats.go's decoding of the message header (the
// signature's; none without authentication), then the bridge's delivery
// path (verify, decode, sequence check, publish into a hub without
// listeners: what a listener costs does not depend on authentication).
// The network and nats.go's protocol parsing are not included. The
// origin's sequence number is forgotten before each message, so that the
// same signed message can be received again without counting as a replay.
func BenchmarkReceive(b *testing.B) {
	for _, e := range benchEnvelopes(b) {
		for _, auth := range []bool{false, true} {
			mode := "plain"
			if auth {
				mode = "auth"
			}
			b.Run(fmt.Sprintf("%s-%dB/%s", e.name, len(e.data), mode), func(b *testing.B) {
				h, err := hub.New(hub.Options{})
				if err != nil {
					b.Fatal(err)
				}
				o, err := resolve(Options{})
				if err != nil {
					b.Fatal(err)
				}
				br := &Bridge{hub: h, opts: o, head: envelopeHead("self"), peers: make(map[string]peer), wake: make(chan struct{}, 1)}
				var hdr []byte
				if auth {
					br.verifier = newVerifier(benchKeys[:1], o.subject)
					sig := newSigner(benchKeys[0], o.subject).sign(e.data)
					hdr = []byte("NATS/1.0\r\n" + AuthHeader + ": " + sig + "\r\n\r\n")
				}
				b.SetBytes(int64(len(e.data)))
				b.ReportAllocs()
				cpu0, ok := processCPU()
				n := 0
				for b.Loop() {
					n++
					m := &nats.Msg{Data: e.data}
					if hdr != nil {
						if m.Header, err = nats.DecodeHeadersMsg(hdr); err != nil {
							b.Fatal(err)
						}
					}
					clear(br.peers)
					br.onMsg(m)
				}
				reportCPUPerOp(b, float64(cpu0.Nanoseconds()), ok, n)
				if st := br.Stats(); st.Received != uint64(b.N) || st.Dropped.Total() != 0 {
					b.Fatalf("received %d of %d: %+v", st.Received, b.N, st)
				}
			})
		}
	}
}
