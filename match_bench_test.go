package listen_test

import (
	"context"
	"testing"

	"github.com/mcplisten/listen"
)

// BenchmarkNotificationSubResources measures shaping a resource update into
// a reused buffer with Options.SubResources, for a subscription on
// file:///project/ (and 15 other folders): an update of a file 4 levels
// below it ("covered"), the same with a CanRead that allows it
// ("covered+CanRead"), one outside every folder ("dropped"), and the
// subscribed URI itself ("exact", as without SubResources).
//
// Run: go test . -run '^$' -bench SubResources -benchmem -count 5
func BenchmarkNotificationSubResources(b *testing.B) {
	uris := []string{"file:///project/"}
	for i := range 15 {
		uris = append(uris, "file:///other/"+string(rune('a'+i))+"/")
	}
	allow := func(context.Context, *listen.Request, string) bool { return true }
	for _, tc := range []struct {
		name    string
		uri     string
		canRead func(context.Context, *listen.Request, string) bool
		want    bool
	}{
		{"covered", "file:///project/src/pkg/sub/main.go", nil, true},
		{"covered+CanRead", "file:///project/src/pkg/sub/main.go", allow, true},
		{"dropped", "file:///elsewhere/src/pkg/sub/main.go", nil, false},
		{"exact", "file:///project/", nil, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sub := openSubRes(b, listen.Options{SubResources: &listen.SubResources{}, CanRead: tc.canRead}, uris...)
			ev := listen.ResourceUpdated(tc.uri)
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var ok bool
				buf, ok, _ = sub.AppendNotification(buf[:0], ev)
				if ok != tc.want {
					b.Fatal("unexpected decision")
				}
			}
		})
	}
}
