package hub_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// BenchmarkPublishResourceUpdatedFolders publishes one resource update to a
// hub whose listeners are folder listeners (listen.Options.SubResources):
// n listeners spread over n/10 distinct folder subscriptions at depths 1 to
// 8 below file:///bench/ (a random tree, fan-out 4, 6, then 8 per level;
// half the folders end with '/'), ten listeners per folder.
//
//   - "hit": the update is a file in a random subscribed folder (depth 2
//     to 9); every listener of that folder and of the subscribed folders
//     above it is selected (matched/op).
//   - "miss": the update is at depth 8 in a tree nobody watches: the cost
//     of the index walk alone.
//   - "exact": an exact (non-folder) listener's own URI, with the folder
//     listeners open: what the folder index adds to an exact update.
//
// Each round of 1,024 updates is followed, outside the timer, by a drain
// of every queue, so the state does not depend on b.N.
//
// Run: go test ./hub/ -run '^$' -bench Folders -benchmem -count 5
func BenchmarkPublishResourceUpdatedFolders(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		folders := folderTree(n/10, 1)
		for _, mode := range []string{"hit", "miss", "exact"} {
			b.Run(fmt.Sprintf("listeners=%d/folders=%d/%s", n, len(folders), mode), func(b *testing.B) {
				h := newHub(b, hub.Options{})
				folderReq := request("bench")
				folderReq.SubResources = &listen.SubResources{}
				req := request("bench")
				streams := make([]listen.Stream, 0, n+1)
				for i := range n {
					_, s, err := h.Open(context.Background(), folderReq, listen.Filter{spec.KeyResourceSubscriptions: []any{folders[i%len(folders)]}})
					if err != nil {
						b.Fatal(err)
					}
					streams = append(streams, s)
				}
				const exactURI = "file:///exact/only.txt"
				_, s, err := h.Open(context.Background(), req, listen.Filter{spec.KeyResourceSubscriptions: []any{exactURI}})
				if err != nil {
					b.Fatal(err)
				}
				streams = append(streams, s)
				b.Cleanup(func() { closeAll(streams) })

				rng := rand.New(rand.NewPCG(2, 3))
				updates := make([]string, 1024)
				for i := range updates {
					switch mode {
					case "hit":
						updates[i] = strings.TrimSuffix(folders[rng.IntN(len(folders))], "/") + "/file.txt"
					case "miss":
						updates[i] = fmt.Sprintf("file:///elsewhere/a%d/b/c/d/e/f/g", i)
					default:
						updates[i] = exactURI
					}
				}
				// One warm-up round: every ring gets its first buffer.
				for _, u := range updates {
					_, _ = h.ResourceUpdated(u)
				}
				drainPoll(streams)
				matched := 0
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for range b.N {
					r, err := h.ResourceUpdated(updates[i])
					if err != nil || (mode == "hit" && r.Matched < 10) || (mode == "miss" && r.Matched != 0) {
						b.Fatalf("%s: matched %d, err %v", updates[i], r.Matched, err)
					}
					matched += r.Matched
					if i++; i == len(updates) {
						i = 0
						b.StopTimer()
						drainPoll(streams)
						b.StartTimer()
					}
				}
				b.ReportMetric(float64(matched)/float64(b.N), "matched/op")
			})
		}
	}
}

// folderTree returns n distinct folder URIs at depths 1 to 8 below
// file:///bench/, drawn from a random tree (fan-out 4, then 6, then 8 per
// level), half of them ending with '/'.
func folderTree(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	fanout := []int{4, 6, 8, 8, 8, 8, 8, 8}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		depth := 1 + rng.IntN(8)
		var sb strings.Builder
		sb.WriteString("file:///bench")
		for k := range depth {
			fmt.Fprintf(&sb, "/n%d", rng.IntN(fanout[k]))
		}
		if rng.IntN(2) == 0 {
			sb.WriteByte('/')
		}
		u := sb.String()
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// drainPoll empties every queue without blocking.
func drainPoll(streams []listen.Stream) {
	for _, s := range streams {
		ps := s.(listen.NotifyStream)
		for {
			if _, ok, _ := ps.TryNext(); !ok {
				break
			}
		}
	}
}

// BenchmarkOpenFolderListener opens (and closes) one folder listener whose
// 32 URIs of 4 KiB fill a 128 KiB filter: "slashes", every URI a run of
// '/' (so each has about 4,000 folders), against "flat", URIs of the same
// size without a '/' in their path but the first. The key reduction is
// linear in the bytes of the URIs, so the two cost about the same.
//
// Run: go test ./hub/ -run '^$' -bench OpenFolderListener -benchmem -count 5
func BenchmarkOpenFolderListener(b *testing.B) {
	const n, size = 32, 4 << 10
	for _, shape := range []struct{ name, fill string }{{"slashes", "/"}, {"flat", "a"}} {
		b.Run(shape.name, func(b *testing.B) {
			uris := make([]any, n)
			for i := range uris {
				u := fmt.Sprintf("file:///%s%02d", strings.Repeat(shape.fill, size-12), i)
				uris[i] = u
			}
			h := newHub(b, hub.Options{})
			req := request("bench")
			req.SubResources = &listen.SubResources{}
			f := listen.Filter{spec.KeyResourceSubscriptions: uris}
			b.ReportAllocs()
			for b.Loop() {
				_, s, err := h.Open(context.Background(), req, f)
				if err != nil {
					b.Fatal(err)
				}
				s.Close(nil)
			}
		})
	}
}
