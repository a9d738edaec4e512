package natsbridge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
)

// The bridge carries sub-resource updates unchanged: a folder listener
// (listen.Options.SubResources) on one instance receives the updates of
// files inside its folder published on another, with the URI and metadata
// as published, and nothing outside. The test is self-contained (its own
// embedded NATS server and subscriptions served with listen.Subscription.Serve).

// folderInstance is a hub joined to NATS by a bridge.
type folderInstance struct {
	hub    *hub.Hub
	bridge *natsbridge.Bridge
}

func newFolderInstance(t *testing.T, url string) *folderInstance {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	h, err := hub.New(hub.Options{MaxBuffer: 1000})
	require.NoError(t, err)
	b, err := natsbridge.New(nc, h, natsbridge.Options{Options: cluster.Options{Resync: []listen.Kind{}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return &folderInstance{hub: h, bridge: b}
}

// serveFolder opens a subscription for uris on in's hub and serves it; its
// notifications arrive on the returned channel.
func (in *folderInstance) serveFolder(t *testing.T, sub bool, id string, uris ...string) <-chan map[string]any {
	t.Helper()
	list := make([]any, len(uris))
	for i, u := range uris {
		list[i] = u
	}
	req := &listen.Request{
		ID:                 jsonrpc.StringID(id),
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      listen.Filter{spec.KeyResourceSubscriptions: list},
		ClientCapabilities: map[string]any{},
	}
	opts := &listen.Options{Capabilities: listen.Capabilities{ResourcesSubscribe: true}}
	if sub {
		opts.SubResources = &listen.SubResources{}
	}
	s, err := listen.Open(context.Background(), in.hub, req, opts)
	require.NoError(t, err)
	msgs := make(chan map[string]any, 1024)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ctx, listen.Sink{Write: func(b []byte) error {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			msgs <- m
			return nil
		}})
	}()
	t.Cleanup(func() {
		cancel(listen.ErrCancelled)
		<-done
	})
	ack := folderNext(t, msgs)
	require.Equal(t, spec.MethodAcknowledged, ack["method"])
	return msgs
}

func folderNext(t *testing.T, msgs <-chan map[string]any) map[string]any {
	t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	select {
	case m := <-msgs:
		return m
	case <-timer.C:
		require.FailNow(t, "no notification")
	}
	return nil
}

func TestBridgeCarriesSubResourceUpdates(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe))
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })

	a := newFolderInstance(t, ns.ClientURL())
	b := newFolderInstance(t, ns.ClientURL())
	folder := b.serveFolder(t, true, "folder", "file:///project/")
	const fence = "file:///project/zz-fence"
	exact := b.serveFolder(t, false, "exact", "file:///project/", fence)
	updates := []string{
		"file:///project/src/main.go",
		"FILE:///project/%7Euser/A.txt?rev=3#L1", // delivered as published
		"file:///projectx/a",
		"file:///project/../etc/passwd",
		"file:///project%2Fx",
		"file://other/project/a",
		"file:///project/",
		fence,
	}
	for i, u := range updates {
		r, err := a.hub.Publish(listen.ResourceUpdated(u).WithMetadata(map[string]any{"com.example/seq": i}))
		require.NoError(t, err)
		assert.Zero(t, r.Matched, "no local listener on the publishing instance")
	}

	read := func(msgs <-chan map[string]any) (uris []string, seqs []any) {
		for {
			m := folderNext(t, msgs)
			require.Equal(t, spec.MethodResourceUpdated, m["method"])
			p := m["params"].(map[string]any)
			uri := p["uri"].(string)
			if uri == fence {
				return uris, seqs
			}
			uris = append(uris, uri)
			seqs = append(seqs, p["_meta"].(map[string]any)["com.example/seq"])
		}
	}
	uris, seqs := read(folder)
	assert.Equal(t, []string{"file:///project/src/main.go", "FILE:///project/%7Euser/A.txt?rev=3#L1", "file:///project/"}, uris)
	assert.Equal(t, []any{0.0, 1.0, 6.0}, seqs, "the metadata crosses the bridge with the update")
	uris, _ = read(exact)
	assert.Equal(t, []string{"file:///project/"}, uris, "an exact listener as before")
}
