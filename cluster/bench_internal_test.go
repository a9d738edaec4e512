package cluster

import (
	"bytes"
	"fmt"
	"testing"

	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/testkit"
)

// reportCPUPerOp reports the process's CPU time per operation since cpu0
// (see testkit.ProcessCPU): on a shared machine it varies much less
// than ns/op, which counts the time other programs held the cores.
func reportCPUPerOp(b *testing.B, cpu0 time.Duration, ok bool, ops int) {
	cpu1, ok1 := testkit.ProcessCPU()
	if ok && ok1 && ops > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(ops), "cpu-ns/op")
	}
}

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
		return append(appendStamp(envelopeHead("Jlbujq-OQ2uZ1d7uP6r8dA"), 12345, time.Now().UnixMilli()+1000), body...)
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
			cpu0, ok := testkit.ProcessCPU()
			n := 0
			for b.Loop() {
				_ = s.sign(e.data)
				n++
			}
			reportCPUPerOp(b, cpu0, ok, n)
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
				sig := newSigner(c.key, "mcp.listen.events").sign(e.data)
				v := newVerifier(c.keys, "mcp.listen.events")
				want := c.name != "forged"
				b.SetBytes(int64(len(e.data)))
				b.ReportAllocs()
				cpu0, ok := testkit.ProcessCPU()
				n := 0
				for b.Loop() {
					if err := v.verify(sig, e.data); (err == nil) != want {
						b.Fatal(err)
					}
					n++
				}
				reportCPUPerOp(b, cpu0, ok, n)
			})
		}
	}
}

// BenchmarkReceive is a node's cost per received message, without and
// with authentication: verify, decode, freshness and sequence checks,
// publish into a hub without listeners (what a listener costs does not
// depend on authentication). The broker's client is not included. The
// origin's sequence number is forgotten before each message, so that the
// same signed message can be received again without counting as a replay.
func BenchmarkReceive(b *testing.B) {
	for i, e := range benchEnvelopes(b) {
		for _, auth := range []bool{false, true} {
			mode := "plain"
			if auth {
				mode = "auth"
			}
			b.Run(fmt.Sprintf("%s-%dB/%s", e.name, len(e.data), mode), func(b *testing.B) {
				// Stamped now, not when the first run began: a node holds
				// back a signed message stamped before it started.
				e := benchEnvelopes(b)[i]
				h, err := hub.New(hub.Options{})
				if err != nil {
					b.Fatal(err)
				}
				var opts Options
				if auth {
					opts.AuthKeys = benchKeys[:1]
				}
				const scope = "mcp.listen.events"
				n, err := NewNode(h, Transport{Scope: scope, Send: func(Message) error { return nil }}, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer n.Close()
				m := Message{Data: e.data}
				if auth {
					m.Sig = newSigner(benchKeys[0], scope).sign(e.data)
				}
				b.SetBytes(int64(len(e.data)))
				b.ReportAllocs()
				cpu0, ok := testkit.ProcessCPU()
				count := 0
				for b.Loop() {
					count++
					clear(n.peers)
					n.Receive(m)
				}
				reportCPUPerOp(b, cpu0, ok, count)
				if st := n.Stats(); st.Received != uint64(b.N) || st.Dropped.Total() != 0 {
					b.Fatalf("received %d of %d: %+v", st.Received, b.N, st)
				}
			})
		}
	}
}
