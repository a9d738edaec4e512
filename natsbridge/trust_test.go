package natsbridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// forgedReserved is a hand-made envelope from a peer that is no bridge: a
// resource update whose metadata and params _meta carry keys the MCP
// specification reserves, next to ordinary ones.
func forgedReserved(seq int, id string) []byte {
	return fmt.Appendf(nil, `{"v":1,"o":"forger","n":%d,"k":"updated","u":%q,`+
		`"p":{"extra":1,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t9"},"com.example/p":"kept"}},`+
		`"m":{%q:%q,"io.modelcontextprotocol/serverInfo":{"name":"evil","version":"6.6.6"},`+
		`"io.modelcontextprotocol/subscriptionId":"forged","dev.mcp/x":1,"IO.ModelContextProtocol/y":2,"com.example.mcp/z":3}}`,
		seq, watched, idKey, id)
}

// TestReservedMetaStripped: a forging peer (a raw NATS connection) puts
// reserved _meta keys (io.modelcontextprotocol/serverInfo, subscriptionId,
// dev.mcp/...) in an event's metadata and params _meta: the listeners of
// every instance receive the event without them, with its other members
// intact, and the bridge counts the sanitisation (not a drop).
func TestReservedMetaStripped(t *testing.T) {
	ns := startNATS(t, 0)
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsOptions())
	s := b.listen(t, "B-res", `{"resourceSubscriptions":["`+watched+`"]}`)
	raw := connect(t, ns.ClientURL())
	require.NoError(t, raw.Publish(b.bridge.Subject(), forgedReserved(1, "forged-1")))
	require.NoError(t, raw.Flush())

	n := s.next(t)
	assert.Equal(t, "forged-1", n.id)
	assert.Equal(t, spec.MethodResourceUpdated, n.method)
	assert.NotContains(t, n.raw, "serverInfo")
	assert.NotContains(t, n.raw, "related-task")
	assert.NotContains(t, n.raw, "forged\"")
	assert.NotContains(t, n.raw, "dev.mcp/")
	assert.NotContains(t, n.raw, "IO.ModelContextProtocol/")
	assert.Equal(t, 1, strings.Count(n.raw, spec.MetaSubscriptionID), n.raw)
	meta := n.params["_meta"].(map[string]any)
	assert.Equal(t, map[string]any{
		spec.MetaSubscriptionID: "B-res",
		idKey:                   "forged-1",
		"com.example/p":         "kept",
		"com.example.mcp/z":     json.Number("3"), // not reserved: the second label is "example"
	}, meta)
	assert.Equal(t, json.Number("1"), n.params["extra"], "extra params are the sender's business")

	ri := await(t, b.rec.Recvs, "the reception", nil)
	assert.Equal(t, 5, ri.Stripped)
	st := b.bridge.Stats()
	assert.Equal(t, uint64(1), st.Received)
	assert.Equal(t, uint64(1), st.Sanitised)
	assert.Zero(t, st.Dropped.Total())

	// An event from a bridge, without reserved keys, is not counted.
	a := newInstance(t, "A", connect(t, ns.ClientURL()), natsOptions())
	_, err := a.hub.Publish(tagged(listen.ResourceUpdated(watched), "clean"))
	require.NoError(t, err)
	assert.Equal(t, "clean", s.next(t).id)
	ri = await(t, b.rec.Recvs, "the second reception", nil)
	assert.Zero(t, ri.Stripped)
	assert.Equal(t, uint64(1), b.bridge.Stats().Sanitised)
}

// permissionsConf is the NATS configuration the README shows.
const permissionsConf = "testdata/nats-permissions.conf"

// TestPermissionsKeepForgersOut runs a NATS server with the README's
// permissions: the instances (user mcp-instance) talk over the subject, and
// another user of the same NATS system can neither publish there (the
// server refuses the message, so the bridges never see it) nor read it.
func TestPermissionsKeepForgersOut(t *testing.T) {
	opts, err := server.ProcessConfigFile(permissionsConf)
	require.NoError(t, err)
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	ns, err := server.NewServer(opts)
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe))
	t.Cleanup(func() { stopNATS(ns) })

	instance := func() *nats.Conn {
		return connectVia(t, ns.ClientURL(), nats.UserInfo("mcp-instance", "instance-secret"))
	}
	a := newInstance(t, "A", instance(), natsOptions())
	b := newInstance(t, "B", instance(), natsOptions())
	s := b.listen(t, "B-res", `{"resourceSubscriptions":["`+watched+`"]}`)

	errs := make(chan error, 16)
	other, err := nats.Connect(ns.ClientURL(), nats.UserInfo("other-service", "other-secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	require.NoError(t, err)
	t.Cleanup(other.Close)
	spied := make(chan *nats.Msg, 16)
	_, err = other.ChanSubscribe(b.bridge.Subject(), spied)
	require.NoError(t, err)
	require.NoError(t, other.Publish(b.bridge.Subject(), forgedReserved(1, "forged")))
	require.NoError(t, other.Flush())
	for _, what := range []string{"Subscription", "Publish"} {
		e := await(t, errs, "the server refusing the "+what, func(e error) bool {
			return strings.Contains(e.Error(), "Permissions Violation for "+what)
		})
		assert.ErrorIs(t, e, nats.ErrPermissionViolation)
	}

	_, err = a.hub.Publish(tagged(listen.ResourceUpdated(watched), "genuine"))
	require.NoError(t, err)
	assert.Equal(t, "genuine", s.next(t).id)
	require.NoError(t, other.Flush())
	assert.Empty(t, spied, "the other user reads nothing")
	st := b.bridge.Stats()
	assert.Equal(t, uint64(1), st.Received)
	assert.Zero(t, st.Dropped.Total())
}

// TestREADMEShowsPermissions: the configuration in the README is the one
// TestPermissionsKeepForgersOut runs.
func TestREADMEShowsPermissions(t *testing.T) {
	conf, err := os.ReadFile(permissionsConf)
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), string(conf)), "README.md must show %s verbatim", permissionsConf)
}
