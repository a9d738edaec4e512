package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// An open listen on a hub holds one copy of its accepted filter, shared by
// the hub's listener and the subscription: the heap it keeps is the filter's
// JSON size plus the index entries, about 180 bytes per URI (bounded by the
// 1,000 URIs a listen may name), not two copies of the filter.
func TestOpenListenHoldsOneCopyOfItsFilter(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const listens, perListen, uriLen = 40, 1000, 120 // the largest filter the default limits accept
	h := newHub(t, hub.Options{})
	opts := &listen.Options{Capabilities: listen.Capabilities{ResourcesSubscribe: true}}

	filters := make([]listen.Filter, listens)
	var jsonBytes int
	for i := range filters {
		list := make([]any, perListen)
		for j := range list {
			list[j] = fmt.Sprintf("file:///%s/%03d/%04d", strings.Repeat("d", uriLen-18), i, j)
		}
		filters[i] = listen.Filter{"resourceSubscriptions": list}
		b, err := json.Marshal(filters[i])
		require.NoError(t, err)
		jsonBytes += len(b)
	}
	subs := make([]*listen.Subscription, 0, listens)
	before := heapInUse()
	for i, f := range filters {
		req := &listen.Request{ID: jsonrpc.IntID(int64(i + 1)), ProtocolVersion: spec.ProtocolVersion, Notifications: f}
		sub, err := listen.Open(context.Background(), h, req, opts)
		require.NoError(t, err)
		subs = append(subs, sub)
	}
	after := heapInUse()
	runtime.KeepAlive(filters) // the requests' own filters are not counted
	per := float64(after-before) / listens
	perJSON := float64(jsonBytes) / listens
	t.Logf("retained per open listen: %.0f B for a %.0f B filter (%.2f×, overhead %.0f B)", per, perJSON, per/perJSON, per-perJSON)
	require.Less(t, per, perJSON+200*perListen+4096, "an open listen holds more than one copy of its filter")
	for _, s := range subs {
		s.Close(nil)
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
