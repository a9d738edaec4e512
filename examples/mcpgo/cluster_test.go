package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/examples/internal/listencheck"
)

// startInstance runs the built example with args on a free loopback port
// and returns its endpoint; it is stopped (SIGTERM) with the test.
func startInstance(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-quiet"}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready, done := make(chan string, 1), make(chan struct{})
	go func() { // ends when the process's stdout closes (it exited)
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				ready <- rest
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case url := <-ready:
		return url
	case <-done:
		require.FailNow(t, "the server exited before listening")
	case <-time.After(15 * time.Second):
		require.FailNow(t, "the server did not listen in time")
	}
	return ""
}

// Two examples/mcpgo processes behind a real NATS server (-broker) act as
// one server: a listen on B receives the tools/list_changed of a tools/call
// on A and the resources/updated A's mcp-go server broadcasts, tagged with
// its own id.
func TestTwoInstancesAsOne(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(15*time.Second))
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() }) // after the instances stop (cleanups run last first)
	bin := filepath.Join(t.TempDir(), "mcpgo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	a := startInstance(t, bin, "-broker", ns.ClientURL())
	b := startInstance(t, bin, "-broker", ns.ClientURL())

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	const uri = "test://cluster/config"
	resp := post(t, ctx, b, "subscriptions/listen", `{"jsonrpc":"2.0","id":"on-B","method":"subscriptions/listen","params":{`+withMeta("{}")+`,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["`+uri+`"]}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	msgs := listencheck.Messages(resp.Body)
	next := func() map[string]any {
		select {
		case m := <-msgs:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return nil
		}
	}
	require.Equal(t, "notifications/subscriptions/acknowledged", next()["method"])
	subID := func(m map[string]any) any {
		return m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]
	}

	status, m := callTool(t, a, "test_trigger_tool_change", `{}`, "{}", nil)
	require.Equal(t, http.StatusOK, status, "%v", m)
	n := next()
	assert.Equal(t, "notifications/tools/list_changed", n["method"])
	assert.Equal(t, "on-B", subID(n))

	status, m = callTool(t, a, "trigger_resource_update", `{"uri":"`+uri+`"}`, "{}", nil)
	require.Equal(t, http.StatusOK, status, "%v", m)
	n = next()
	assert.Equal(t, "notifications/resources/updated", n["method"])
	assert.Equal(t, uri, n["params"].(map[string]any)["uri"])
	assert.Equal(t, "on-B", subID(n))
}
