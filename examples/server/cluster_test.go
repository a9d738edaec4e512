package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/examples/internal/listencheck"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
)

// failsafe bounds every wait of the cluster tests.
const failsafe = 15 * time.Second

// defaultChannel is where the bridges of the server carry events: the
// NATS subject of natsbridge's default Prefix, and redisbridge's default
// Stream.
const defaultChannel = "mcp.listen.events"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBin builds this command once per test run.
func serverBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "examples-server-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "server")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// proc is one examples/server process.
type proc struct {
	cmd  *exec.Cmd
	url  string // http://ADDR/mcp
	addr string
	done chan struct{}
}

// startProc runs the server with args on a free loopback port and waits
// for its "listening on" line; it is stopped (SIGTERM) with the test.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(serverBin(t), append([]string{"-addr", "127.0.0.1:0", "-quiet"}, args...)...)
	cmd.Stderr = os.Stderr // warnings (a drop, a lost broker) show in the test's output
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	// Ends when the process's stdout closes (it exited).
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on http://"); ok {
				ready <- strings.TrimSuffix(rest, "/mcp")
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(p.stop)
	select {
	case p.addr = <-ready:
	case <-p.done:
		require.FailNow(t, "the server exited before listening")
	case <-time.After(failsafe):
		require.FailNow(t, "the server did not listen in time")
	}
	p.url = "http://" + p.addr + "/mcp"
	return p
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(failsafe):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// listenOn opens a listen with id and filter on p and returns its
// notifications (the acknowledgement read).
func listenOn(t *testing.T, ctx context.Context, p *proc, id, filter string) <-chan map[string]any {
	t.Helper()
	resp := post(t, ctx, p.url, "subscriptions/listen",
		`{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{`+meta+`,"notifications":`+filter+`}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	msgs := listencheck.Messages(resp.Body)
	ack := <-msgs
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	return msgs
}

// nextNote returns the next notification of msgs, failing after failsafe.
func nextNote(t *testing.T, msgs <-chan map[string]any) (method, uri, subID string) {
	t.Helper()
	select {
	case m, ok := <-msgs:
		require.True(t, ok, "the stream ended")
		params, _ := m["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		method, _ = m["method"].(string)
		uri, _ = params["uri"].(string)
		subID, _ = meta["io.modelcontextprotocol/subscriptionId"].(string)
		return method, uri, subID
	case <-time.After(failsafe):
		require.FailNow(t, "no notification in time")
	}
	return "", "", ""
}

// brokerStats reads the bridge's counters from p's /debug/vars.
func brokerStats(t *testing.T, p *proc) cluster.Stats {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/debug/vars")
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc struct {
		Broker *cluster.Stats `json:"broker"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.NotNil(t, doc.Broker, "no broker counters at /debug/vars")
	return *doc.Broker
}

// brokers are the engines the cluster tests run on, each started for the
// subtest that asks for its URL: an embedded NATS server (the nats-server
// module) and a redis-server process (redistest.Run skips the Redis
// subtest where there is none).
func brokers() map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"nats": func(t *testing.T) string {
			ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
			require.NoError(t, err)
			ns.Start()
			require.True(t, ns.ReadyForConnections(failsafe))
			t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
			return ns.ClientURL()
		},
		"redis": func(t *testing.T) string { return redistest.Run(t).URL() },
	}
}

// Three server processes behind one real broker act as one server: a
// listen on instance C receives, tagged with its own subscription id, the
// tools/list_changed caused by a tools/call on instance A and the
// resources/updated caused by trigger_resource_update on instance B.
func TestThreeInstancesAsOne(t *testing.T) {
	for name, start := range brokers() {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			a := startProc(t, "-broker", url)
			b := startProc(t, "-broker", url)
			c := startProc(t, "-broker", url)
			ctx, cancel := context.WithTimeout(t.Context(), failsafe)
			defer cancel()
			const uri = "test://cluster/config"
			// Nothing on A or B watches the URI: B's trigger_resource_update
			// (gosdk.Handler.ResourceUpdated) publishes on B's hub, and only
			// the broker carries it to C.
			onC := listenOn(t, ctx, c, "on-C", `{"toolsListChanged":true,"resourceSubscriptions":["`+uri+`"]}`)

			callTool(t, a.url, "test_trigger_tool_change", `{}`)
			method, _, id := nextNote(t, onC)
			assert.Equal(t, "notifications/tools/list_changed", method)
			assert.Equal(t, "on-C", id)

			callTool(t, b.url, "trigger_resource_update", `{"uri":"`+uri+`"}`)
			method, gotURI, id := nextNote(t, onC)
			assert.Equal(t, "notifications/resources/updated", method)
			assert.Equal(t, uri, gotURI)
			assert.Equal(t, "on-C", id)

			st := brokerStats(t, c)
			assert.Equal(t, uint64(2), st.Received)
			assert.Zero(t, st.Dropped.Total())
		})
	}
}

// With -broker-key, a message without the key's signature, and a signed
// message captured and published again (to a running instance, then to
// one restarted since), are dropped and counted, and reach no listen.
func TestBrokerKeyDropsForgedAndReplayed(t *testing.T) {
	key := strings.Repeat("k", cluster.MinAuthKeyBytes)
	for name, start := range brokers() {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			a := startProc(t, "-broker", url, "-broker-key", key)
			c := startProc(t, "-broker", url, "-broker-key", key)
			ctx, cancel := context.WithTimeout(t.Context(), failsafe)
			defer cancel()
			spy := newSpy(t, name, url)

			onC := listenOn(t, ctx, c, "on-C", `{"toolsListChanged":true}`)
			callTool(t, a.url, "test_trigger_tool_change", `{}`)
			method, _, _ := nextNote(t, onC)
			assert.Equal(t, "notifications/tools/list_changed", method)
			captured := spy.capture(t)

			forged := []byte(`{"v":1,"o":"forger","n":1,"t":` + now() + `,"k":"tools"}`)
			spy.publish(t, cluster.Message{Data: forged})
			spy.publish(t, captured)
			require.Eventually(t, func() bool {
				d := brokerStats(t, c).Dropped
				return d.Unauthenticated == 1 && d.Replayed == 1
			}, failsafe, 20*time.Millisecond, "C counts one unauthenticated and one replayed message")

			// C restarts: the captured message is older than its start.
			c.stop()
			c = startProc(t, "-broker", url, "-broker-key", key)
			onC = listenOn(t, ctx, c, "on-C2", `{"toolsListChanged":true}`)
			spy.publish(t, captured)
			require.Eventually(t, func() bool { return brokerStats(t, c).Dropped.Replayed == 1 },
				failsafe, 20*time.Millisecond, "the restarted C drops the replay")
			// The restarted C resynchronises rather than deliver it (a
			// tools/list_changed hint), then genuine changes arrive.
			callTool(t, a.url, "test_trigger_tool_change", `{}`)
			for range 2 {
				method, _, id := nextNote(t, onC)
				assert.Equal(t, "notifications/tools/list_changed", method)
				assert.Equal(t, "on-C2", id)
			}
			st := brokerStats(t, c)
			assert.Equal(t, uint64(1), st.Received, "only the genuine change was delivered")
			assert.Equal(t, uint64(1), st.Resyncs)
		})
	}
}

// now is the current time as an envelope's stamp.
func now() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// spy is a client of the broker that is no instance: it captures the
// instances' messages and publishes whatever it likes.
type spy struct {
	name     string
	nc       *nats.Conn
	captured chan *nats.Msg
	rc       *redis.Client
}

func newSpy(t *testing.T, name, url string) *spy {
	t.Helper()
	s := &spy{name: name}
	if name == "nats" {
		nc, err := nats.Connect(url)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		s.nc, s.captured = nc, make(chan *nats.Msg, 64)
		_, err = nc.ChanSubscribe(defaultChannel, s.captured)
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
		return s
	}
	o, err := redis.ParseURL(url)
	require.NoError(t, err)
	s.rc = redis.NewClient(o)
	t.Cleanup(func() { _ = s.rc.Close() })
	return s
}

// capture returns the last message an instance sent.
func (s *spy) capture(t *testing.T) cluster.Message {
	t.Helper()
	if s.nc != nil {
		var last *nats.Msg
		for {
			select {
			case m := <-s.captured:
				last = m
				continue
			default:
			}
			if last != nil {
				return cluster.Message{Data: last.Data, Sig: last.Header.Get(natsbridge.AuthHeader)}
			}
			select {
			case last = <-s.captured:
			case <-time.After(failsafe):
				require.FailNow(t, "nothing captured")
			}
		}
	}
	es, err := s.rc.XRevRangeN(context.Background(), defaultChannel, "+", "-", 1).Result()
	require.NoError(t, err)
	require.Len(t, es, 1)
	data, _ := es[0].Values["d"].(string)
	sig, _ := es[0].Values["s"].(string)
	return cluster.Message{Data: []byte(data), Sig: sig}
}

// publish sends m to the broker as an instance would, verbatim.
func (s *spy) publish(t *testing.T, m cluster.Message) {
	t.Helper()
	if s.nc != nil {
		msg := &nats.Msg{Subject: defaultChannel, Data: m.Data}
		if m.Sig != "" {
			msg.Header = nats.Header{natsbridge.AuthHeader: {m.Sig}}
		}
		require.NoError(t, s.nc.PublishMsg(msg))
		require.NoError(t, s.nc.Flush())
		return
	}
	values := []any{"d", m.Data}
	if m.Sig != "" {
		values = append(values, "s", m.Sig)
	}
	require.NoError(t, s.rc.XAdd(context.Background(), &redis.XAddArgs{Stream: defaultChannel, Values: values}).Err())
}
