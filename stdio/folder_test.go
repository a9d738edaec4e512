package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
)

// Sub-resource listens (listen.Options.SubResources) over stdio, end to
// end: a hub source, a Server on pipes, a line-reading client. The tests
// use the package's public API only.

// stdioFolderUpdates are published in order to a listen on
// file:///project/ and file:///notes.txt; folder and exact say whether a
// listen with and without SubResources receives each.
var stdioFolderUpdates = []struct {
	uri           string
	folder, exact bool
}{
	{"file:///project/", true, true},
	{"file:///project/src/main.go", true, false},
	{"file:///project/a/b/c/d/e/f/g/h.txt", true, false},
	{"file:///project/README.md#top", true, false},
	{"FILE:///project/x", true, false},
	{"file:///project", false, false},
	{"file:///projectx/a", false, false},
	{"file:///project%2Fsecret", false, false},
	{"file:///project/../etc/passwd", false, false},
	{"file:///project/%2e%2e/etc/passwd", false, false},
	{"file:///project/./a", false, false},
	{"file://other/project/a", false, false},
	{"http:///project/a", false, false},
	{"file:///notes.txt", true, true},
	{"file:///notes.txt/x", true, false},
	{"file:///notes.txtx", false, false},
	{"file:///elsewhere", false, false},
}

const stdioFolderFence = "file:///project/zz-fence"

// stdioFolderConn is one stdio connection to a Server serving a hub.
type stdioFolderConn struct {
	in   *io.PipeWriter
	msgs chan map[string]any
}

func stdioFolderServe(t *testing.T, opts listen.Options) (*hub.Hub, *stdioFolderConn) {
	t.Helper()
	h, err := hub.New(hub.Options{MaxBuffer: 1000})
	require.NoError(t, err)
	opts.Capabilities = listen.Capabilities{ResourcesSubscribe: true}
	srv := newServer(t, h, options{Listen: opts})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioFolderConn{in: inW, msgs: make(chan map[string]any, 1024)}
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close() // EOF: every listen closes, Serve returns
		require.NoError(t, <-served)
		<-read
	})
	return h, c
}

// listen sends a listen from client for uris and waits for its
// acknowledgement.
func (c *stdioFolderConn) listen(t *testing.T, client string, uris ...string) {
	t.Helper()
	list, err := json.Marshal(uris)
	require.NoError(t, err)
	line := `{"jsonrpc":"2.0","id":"` + client + `","method":"subscriptions/listen","params":{` +
		`"notifications":{"resourceSubscriptions":` + string(list) + `},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"1"}}}}` + "\n"
	_, err = io.WriteString(c.in, line)
	require.NoError(t, err)
	m := c.next(t)
	require.Equal(t, spec.MethodAcknowledged, m["method"], "%v", m)
}

func (c *stdioFolderConn) next(t *testing.T) map[string]any {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case m := <-c.msgs:
		return m
	case <-timer.C:
		require.FailNow(t, "no message")
	}
	return nil
}

// untilFences reads resources/updated notifications until each of the
// subscriptions ids has received the fence, and returns the URIs each
// received before it.
func (c *stdioFolderConn) untilFences(t *testing.T, ids ...string) map[string][]string {
	t.Helper()
	got := make(map[string][]string)
	waiting := len(ids)
	for waiting > 0 {
		m := c.next(t)
		require.Equal(t, spec.MethodResourceUpdated, m["method"], "%v", m)
		params := m["params"].(map[string]any)
		id := params["_meta"].(map[string]any)[spec.MetaSubscriptionID].(string)
		if uri := params["uri"].(string); uri == stdioFolderFence {
			waiting--
		} else {
			got[id] = append(got[id], uri)
		}
	}
	return got
}

func publishStdioFolderUpdates(t *testing.T, h *hub.Hub, uris []string) {
	t.Helper()
	for _, u := range uris {
		_, err := h.ResourceUpdated(u)
		require.NoError(t, err)
	}
	_, err := h.ResourceUpdated(stdioFolderFence)
	require.NoError(t, err)
}

// A folder listen receives the updates of the files inside its folders and
// nothing outside; a listen without SubResources behaves as before.
func TestFolderListenOverStdio(t *testing.T) {
	var all, wantFolder, wantExact []string
	for _, u := range stdioFolderUpdates {
		all = append(all, u.uri)
		if u.folder {
			wantFolder = append(wantFolder, u.uri)
		}
		if u.exact {
			wantExact = append(wantExact, u.uri)
		}
	}
	h, c := stdioFolderServe(t, listen.Options{SubResources: &listen.SubResources{}})
	c.listen(t, "folder", "file:///project/", "file:///notes.txt")
	publishStdioFolderUpdates(t, h, all)
	assert.Equal(t, wantFolder, c.untilFences(t, "folder")["folder"])

	h, c = stdioFolderServe(t, listen.Options{})
	c.listen(t, "exact", "file:///project/", "file:///notes.txt", stdioFolderFence)
	publishStdioFolderUpdates(t, h, all)
	assert.Equal(t, wantExact, c.untilFences(t, "exact")["exact"])
}

// CanRead applies to every delivered sub-resource. stdio has no
// authentication: here the policy reads the client's name, which the
// detached request CanRead gets on delivery keeps.
func TestFolderListenCanReadOverStdio(t *testing.T) {
	canRead := func(_ context.Context, req *listen.Request, uri string) bool {
		return req.ClientInfo != nil && req.ClientInfo.Name == "alice" || !strings.HasPrefix(uri, "file:///project/secret")
	}
	h, c := stdioFolderServe(t, listen.Options{SubResources: &listen.SubResources{}, CanRead: canRead})
	c.listen(t, "alice", "file:///project/")
	c.listen(t, "bob", "file:///project/")
	updates := []string{"file:///project/a", "file:///project/secret/key", "file:///project/secret", "file:///project/b"}
	publishStdioFolderUpdates(t, h, updates)
	got := c.untilFences(t, "alice", "bob")
	assert.Equal(t, updates, got["alice"])
	assert.Equal(t, []string{"file:///project/a", "file:///project/b"}, got["bob"])
}
