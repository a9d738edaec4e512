// Command gatewaybench measures a gateway built on package upstream, over
// loopback Streamable HTTP: three upstream servers (this library's hub and
// streamhttp, the first behind a TCP proxy the benchmark cuts or stalls), one
// gateway (an upstream.Feed into a hub served by streamhttp) and N
// downstream listens held by a client process of its own (this program,
// run again with -child). Each downstream listen asks for
// toolsListChanged, promptsListChanged for one in two, resourcesListChanged
// for one in three, and three of 1,000 URIs spread over the upstreams.
//
// It reports, as medians [min–max] over -runs runs where a figure is
// timed: the upstream streams per upstream at rest; the upstream re-listens
// for a burst of 1,000 downstream opens in one second; the fan-out of one
// upstream change to every downstream listen against the same change
// published straight into the gateway's hub, and a loopback round trip; an
// upstream cut (a reset) and stalled (a silent drop): the time to notice
// it, to be acknowledged again once reachable, and for the last affected
// downstream listen to get its hint, with every hint counted against what
// the listens asked for and every notification of the run checked against
// its listen's filter; and the time to release an upstream URI watch once
// its last downstream listen ends. Run it from the repository root:
//
//	go run ./bench/cmd/gatewaybench [-n 10000] [-runs 5] [-keepalive 1s] [-out bench/results/gateway.md]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
	"github.com/mcplisten/listen/upstream"
)

const (
	nUpstreams = 3
	nURIs      = 1000
)

// filterOf is downstream listen i's filter.
func filterOf(i int) listen.Filter {
	f := listen.Filter{spec.KeyToolsListChanged: true}
	if i%2 == 0 {
		f[spec.KeyPromptsListChanged] = true
	}
	if i%3 == 0 {
		f[spec.KeyResourcesListChanged] = true
	}
	uris := make([]any, 3)
	for k := range uris {
		uris[k] = uriOf((i*7 + k*331) % nURIs)
	}
	f[spec.KeyResourceSubscriptions] = uris
	return f
}

// uriOf is the gateway URI number u: upstream u%3's file:///r/u.
func uriOf(u int) string { return fmt.Sprintf("u%d+file:///r/%d", u%nUpstreams, u) }

// burstFilter is burst listen j's: one fresh URI.
func burstFilter(j int) listen.Filter {
	return listen.Filter{spec.KeyResourceSubscriptions: []any{fmt.Sprintf("u%d+file:///burst/%d", j%nUpstreams, j)}}
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

type config struct {
	n, runs, burst, conc int
	fanoutRuns           int
	keepAlive, idle      time.Duration
	out                  string
	log                  io.Writer
}

func run(args []string, stdin io.Reader, stdout, log io.Writer) error {
	fs := flag.NewFlagSet("gatewaybench", flag.ContinueOnError)
	fs.SetOutput(log)
	var cfg config
	fs.IntVar(&cfg.n, "n", 10000, "downstream listens")
	fs.IntVar(&cfg.runs, "runs", 5, "runs of each timed scenario")
	fs.IntVar(&cfg.fanoutRuns, "fanout-runs", 0, "runs of the fan-out comparison (0: -runs)")
	fs.IntVar(&cfg.burst, "burst", 1000, "downstream listens opened in one second, each on a fresh URI")
	fs.IntVar(&cfg.conc, "open-concurrency", 200, "downstream listens being opened at once")
	fs.DurationVar(&cfg.keepAlive, "keepalive", time.Second, "the upstreams' keep-alive interval")
	fs.DurationVar(&cfg.idle, "idle", 0, "the gateway's upstream.HTTP.IdleTimeout (0: automatic, 1.75 times the longest keep-alive interval it observes)")
	fs.StringVar(&cfg.out, "out", "", "also write the report to this file")
	childURL := fs.String("child", "", "internal: run as the client process of the gateway at this URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *childURL != "" {
		return runChild(*childURL, cfg.n, cfg.conc, stdin, stdout)
	}
	if cfg.fanoutRuns <= 0 {
		cfg.fanoutRuns = cfg.runs
	}
	cfg.log = &lockedWriter{w: log} // the client's standard error is copied to it too
	report, err := bench(cfg)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, report)
	if cfg.out != "" {
		return os.WriteFile(cfg.out, []byte(report), 0o644)
	}
	return nil
}

// event is an acknowledgement or a loss of one of the gateway's upstream
// listens, with its time.
type event struct {
	at        time.Time
	name      string
	resources bool
	ack       *upstream.Ack
	err       error
}

// events records the Feed's callbacks.
type events struct {
	mu   sync.Mutex
	list []event
}

func (e *events) add(ev event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// waitFor waits (polling) for an event after from that match says, and
// returns it.
func (e *events) waitFor(from time.Time, d time.Duration, match func(event) bool) (event, error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		for _, ev := range e.list {
			if !ev.at.Before(from) && match(ev) {
				e.mu.Unlock()
				return ev, nil
			}
		}
		e.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	return event{}, errors.New("timed out waiting for an upstream event")
}

// upstreamServer is one upstream: a hub served by streamhttp on loopback
// (u0 behind a proxy).
type upstreamServer struct {
	hub     *hub.Hub
	handler *streamhttp.Handler
	srv     *http.Server
	proxy   *proxy
}

// tb is the testing.TB of the Proxies in a program: they call only
// Helper, Fatalf and Cleanup (the embedded nil TB is never called).
type tb struct {
	testing.TB
	cleanups []func()
}

func (*tb) Helper()                        {}
func (*tb) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *tb) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }

func bench(cfg config) (string, error) {
	var cleanup []func()
	defer func() {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()
	t := &tb{}
	cleanup = append(cleanup, func() {
		for _, f := range slices.Backward(t.cleanups) {
			f()
		}
	})
	caps := listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}
	var ups []*upstreamServer
	var feedUps []upstream.Upstream
	for i := range nUpstreams {
		h, err := hub.New(hub.Options{})
		if err != nil {
			return "", err
		}
		handler, err := streamhttp.New(h, streamhttp.Options{Listen: listen.Options{Capabilities: caps}, KeepAlive: cfg.keepAlive})
		if err != nil {
			return "", err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }() // ends at srv.Shutdown
		cleanup = append(cleanup, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = handler.Shutdown(ctx)
			_ = srv.Shutdown(ctx)
		})
		// u0, the one the benchmark cuts and stalls, is reached through
		// a proxy; the others directly (the fan-out goes through u1).
		addr := ln.Addr().String()
		var p *proxy
		if i == 0 {
			p = newProxy(t, addr)
			addr = p.Addr()
		}
		ups = append(ups, &upstreamServer{hub: h, handler: handler, srv: srv, proxy: p})
		name := fmt.Sprintf("u%d", i)
		feedUps = append(feedUps, upstream.Upstream{Name: name, Transport: &upstream.HTTP{URL: "http://" + addr + "/", IdleTimeout: cfg.idle}, Map: upstream.SchemePrefix(name)})
	}

	evs := &events{}
	feed, err := upstream.NewFeed(upstream.FeedOptions{
		Upstreams: feedUps,
		Listener:  upstream.ListenerOptions{MaxBackoff: 2 * time.Second},
		OnAck: func(name string, resources bool, a upstream.Ack) {
			evs.add(event{at: time.Now(), name: name, resources: resources, ack: &a})
		},
		OnLoss: func(name string, resources bool, err error) {
			evs.add(event{at: time.Now(), name: name, resources: resources, err: err})
		},
	})
	if err != nil {
		return "", err
	}
	gh, err := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
	if err != nil {
		return "", err
	}
	if err := feed.Start(gh); err != nil {
		return "", err
	}
	cleanup = append(cleanup, feed.Close)
	gw, err := streamhttp.New(gh, streamhttp.Options{
		Listen:     listen.Options{CapabilitiesFor: feed.Capabilities},
		MaxStreams: cfg.n + cfg.burst + 100,
	})
	if err != nil {
		return "", err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	gsrv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = gsrv.Serve(gln) }() // ends at gsrv.Shutdown
	cleanup = append(cleanup, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Shutdown(ctx)
		_ = gsrv.Shutdown(ctx)
	})
	for i := range nUpstreams { // the capabilities are known
		if _, err := evs.waitFor(time.Time{}, 10*time.Second, func(e event) bool { return e.name == fmt.Sprintf("u%d", i) && e.ack != nil }); err != nil {
			return "", err
		}
	}

	// The client process.
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	c, err := startChild(self, "http://"+gln.Addr().String()+"/", cfg)
	if err != nil {
		return "", err
	}
	cleanup = append(cleanup, c.stop)
	var ready struct {
		Ready bool  `json:"ready"`
		MS    int64 `json:"ms"`
	}
	if err := c.read(&ready); err != nil {
		return "", fmt.Errorf("client process: %w", err)
	}
	fmt.Fprintf(cfg.log, "%d downstream listens open in %d ms\n", cfg.n, ready.MS)

	var r strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	idle := "automatic"
	if cfg.idle != 0 {
		idle = cfg.idle.String()
	}
	fmt.Fprintf(&r, "# Gateway (upstream.Feed)\n\n`go run ./bench/cmd/gatewaybench -n %d -runs %d -fanout-runs %d -keepalive %v -idle %v`: %d downstream listens over %d upstreams (idle timeout %s), loopback, %s/%s, %d CPUs, load %s.\n\n",
		cfg.n, cfg.runs, cfg.fanoutRuns, cfg.keepAlive, cfg.idle, cfg.n, nUpstreams, idle, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))

	// At rest.
	if err := settle(feed, 10*time.Second); err != nil {
		return "", err
	}
	fmt.Fprintf(&r, "## Upstream streams at rest\n\n| upstream | streams (gateway) | streams (upstream's count) | URIs watched |\n|---|---|---|---|\n")
	for i, s := range feed.Stats() {
		fmt.Fprintf(&r, "| %s | %d | %d | %d |\n", s.Name, s.Lists.Open+s.Resources.Open, ups[i].hub.Stats().Subscriptions, s.Watched)
	}

	// Fan-out.
	rtt := loopbackRTT()
	var viaUp, direct []time.Duration
	for run := range cfg.fanoutRuns {
		order := []bool{false, true}
		if run%2 == 1 { // alternate which path goes first
			order = []bool{true, false}
		}
		for _, straight := range order {
			if err := c.cmd("reset", nil); err != nil {
				return "", err
			}
			t0 := time.Now()
			if straight {
				gh.ToolsListChanged()
			} else {
				ups[1].hub.ToolsListChanged()
			}
			var got tally
			if err := c.cmd(fmt.Sprintf("wait %s %d 30000", spec.MethodToolsListChanged, cfg.n), &got); err != nil {
				return "", err
			}
			if got.Count < cfg.n {
				return "", fmt.Errorf("fan-out: %d of %d listens got the change", got.Count, cfg.n)
			}
			d := time.Unix(0, got.Last).Sub(t0)
			if straight {
				direct = append(direct, d)
			} else {
				viaUp = append(viaUp, d)
			}
		}
	}
	mu, md, mr := median(viaUp), median(direct), median(rtt)
	fmt.Fprintf(&r, "\n## Fan-out of one change to %d downstream listens (last listen's latency)\n\n| path | median [min–max] over %d runs |\n|---|---|\n", cfg.n, cfg.fanoutRuns)
	fmt.Fprintf(&r, "| upstream change (u1's hub) → its listen → gateway's hub → listens | %s |\n| published straight into the gateway's hub | %s |\n| loopback round trip (TCP echo, 1 byte) | %s |\n",
		spread(viaUp), spread(direct), spread(rtt))
	fmt.Fprintf(&r, "\nRatio of medians: %.2f; bound 1.2 × direct + one round trip = %v: %s.\n",
		float64(mu)/float64(md), (md*12/10 + mr).Round(time.Microsecond), verdict(mu <= md*12/10+mr))

	// Loss, re-acknowledgement, hints: a reset and a silent drop.
	fmt.Fprintf(&r, "\n## Upstream u0 lost and back\n\n")
	fmt.Fprintf(&r, "| case | noticed after | bound | re-acknowledged after restore | of which beyond the backoff wait | last hint after re-ack | hints (notifications) as expected | violations |\n|---|---|---|---|---|---|---|---|\n")
	for _, silent := range []bool{false, true} {
		var noticed, reack, over, hint []time.Duration
		allOK := true
		viol, hints := 0, 0
		for range cfg.runs {
			res, err := lossRun(c, feed, evs, ups[0], silent, cfg)
			if err != nil {
				return "", err
			}
			noticed = append(noticed, res.noticed)
			reack = append(reack, res.reack)
			over = append(over, max(res.reackOver, 0))
			hint = append(hint, res.hint)
			allOK = allOK && res.expected
			viol, hints = res.violations, res.hints
		}
		name, bound := "reset (proxy cut)", time.Second
		if silent {
			name, bound = "silent drop (proxy stalled)", 2*cfg.keepAlive
		}
		fmt.Fprintf(&r, "| %s | %s | %v: %s | %s | %s | %s: %s | %s | %d |\n", name, spread(noticed), bound, verdict(slices.Max(noticed) <= bound),
			spread(reack), spread(over), spread(hint), verdict(slices.Max(hint) <= time.Second), fmt.Sprintf("%d: %s", hints, verdict(allOK)), viol)
	}
	fmt.Fprintf(&r, "\nThe upstream stays unreachable 300 ms; the listens back off meanwhile (MinBackoff 100 ms doubling, jittered in its upper half, MaxBackoff 2 s). \"Beyond the backoff wait\" is the time from the restore to the acknowledgement less the backoff wait before the acknowledged attempt (upstream.Gap.Backoff): the listen's own round trips (a TCP connect, the POST, the acknowledgement).\n")

	// Burst.
	before := feed.Stats()
	var burst struct {
		OK bool  `json:"ok"`
		MS int64 `json:"ms"`
	}
	if err := c.cmd(fmt.Sprintf("burst %d 1000", cfg.burst), &burst); err != nil {
		return "", err
	}
	if !burst.OK {
		return "", errors.New("burst: a listen failed to open")
	}
	if err := settle(feed, 10*time.Second); err != nil {
		return "", err
	}
	after := feed.Stats()
	fmt.Fprintf(&r, "\n## A burst of %d downstream opens in %d ms, each on a fresh URI\n\n| upstream | re-listens | streams at rest after | URIs watched after |\n|---|---|---|---|\n", cfg.burst, burst.MS)
	for i := range after {
		fmt.Fprintf(&r, "| %s | %d | %d | %d |\n", after[i].Name, after[i].Resources.Relistens-before[i].Resources.Relistens,
			after[i].Lists.Open+after[i].Resources.Open, after[i].Watched)
	}

	// Release.
	var release []time.Duration
	for j := range cfg.runs {
		name := fmt.Sprintf("u%d", j%nUpstreams)
		uri := strings.TrimPrefix(burstFilter(j).Strings(spec.KeyResourceSubscriptions)[0], name+"+")
		t0 := time.Now()
		if err := c.cmd(fmt.Sprintf("close %d", j), nil); err != nil {
			return "", err
		}
		ev, err := evs.waitFor(t0, 10*time.Second, func(e event) bool {
			return e.name == name && e.resources && e.ack != nil && !slices.Contains(e.ack.Accepted.Strings(spec.KeyResourceSubscriptions), uri)
		})
		if err != nil {
			return "", fmt.Errorf("release: %w", err)
		}
		release = append(release, ev.at.Sub(t0))
		time.Sleep(300 * time.Millisecond) // past the RelistInterval: one release at a time
	}
	fmt.Fprintf(&r, "\n## Upstream URI watch released after its last downstream listen ends\n\n%s over %d runs (the close of the downstream stream to the acknowledgement of the upstream re-listen without the URI, after which the previous upstream listen is closed): %s.\n",
		spread(release), cfg.runs, verdict(slices.Max(release) <= time.Second))
	var q quietReport
	if err := c.cmd("quiet 300", &q); err != nil {
		return "", err
	}
	fmt.Fprintf(&r, "\nNotifications outside their listen's filter over the whole run: %d.\n", q.Violations)
	return r.String(), nil
}

type quietReport struct {
	Tokens     map[string]tally `json:"tokens"`
	Violations int              `json:"violations"`
	Dups       int              `json:"dups"`
}

type lossResult struct {
	noticed, reack, hint time.Duration
	reackOver            time.Duration // re-ack after restore, less the backoff wait of the acknowledged attempt
	expected             bool
	violations           int
	hints                int // hint notifications expected (and counted)
}

// lossRun cuts or stalls u0's proxy, restores it after 300 ms and
// measures: the loss noticed, the re-acknowledgement, the hints.
func lossRun(c *child, feed *upstream.Feed, evs *events, u *upstreamServer, silent bool, cfg config) (lossResult, error) {
	var res lossResult
	if err := settle(feed, 10*time.Second); err != nil {
		return res, err
	}
	if err := c.cmd("reset", nil); err != nil {
		return res, err
	}
	t0 := time.Now()
	if silent {
		u.proxy.Stall()
	} else {
		u.proxy.Cut()
	}
	var lost [2]time.Time
	for k, resources := range []bool{false, true} {
		ev, err := evs.waitFor(t0, 30*time.Second, func(e event) bool { return e.name == "u0" && e.resources == resources && e.err != nil })
		if err != nil {
			return res, fmt.Errorf("loss: %w", err)
		}
		lost[k] = ev.at
	}
	res.noticed = max(lost[0].Sub(t0), lost[1].Sub(t0))
	if silent {
		u.proxy.Cut() // ends the stall
	}
	time.Sleep(300 * time.Millisecond) // the upstream is down
	restored := time.Now()
	u.proxy.Restore()
	var acked [2]time.Time
	for k, resources := range []bool{false, true} {
		ev, err := evs.waitFor(restored, 30*time.Second, func(e event) bool {
			return e.name == "u0" && e.resources == resources && e.ack != nil && e.ack.Gap != nil
		})
		if err != nil {
			return res, fmt.Errorf("re-ack: %w", err)
		}
		acked[k] = ev.at
		// The attempt acknowledged started at most its backoff after
		// the restore (or before it): what remains is the listen's own
		// round trips.
		if over := ev.at.Sub(restored) - ev.ack.Gap.Backoff; over > res.reackOver {
			res.reackOver = over
		}
	}
	res.reack = max(acked[0].Sub(restored), acked[1].Sub(restored))
	// What each listen should have got: a hint of each list kind it asks
	// for, one update per URI of u0 it watches.
	want := map[string]int{}
	for i := range cfg.n {
		f := filterOf(i)
		for _, k := range []struct{ key, method string }{
			{spec.KeyToolsListChanged, spec.MethodToolsListChanged},
			{spec.KeyPromptsListChanged, spec.MethodPromptsListChanged},
			{spec.KeyResourcesListChanged, spec.MethodResourcesListChanged},
		} {
			if f[k.key] == true {
				want[k.method]++
			}
		}
		for _, uri := range f.Strings(spec.KeyResourceSubscriptions) {
			if strings.HasPrefix(uri, "u0+") {
				want[spec.MethodResourceUpdated+" "+uri]++
			}
		}
	}
	for _, n := range want {
		res.hints += n
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return res, err
	}
	var q quietReport
	if err := c.cmd("expect 30000 "+string(wantJSON), &q); err != nil {
		return res, err
	}
	res.expected = q.Dups == 0 && len(q.Tokens) == len(want)
	var last time.Time
	for tok, n := range want {
		got, ok := q.Tokens[tok]
		if !ok || got.Count != n || got.Total != n {
			res.expected = false
			continue
		}
		at := time.Unix(0, got.Last)
		ack := acked[0]
		if strings.HasPrefix(tok, spec.MethodResourceUpdated) {
			ack = acked[1]
		}
		if d := at.Sub(ack); at.After(last) {
			last = at
			res.hint = d
		}
	}
	res.violations = q.Violations
	return res, nil
}

// settle waits until every upstream has its streams at rest: one or two
// open, no re-listen pending for 500 ms.
func settle(feed *upstream.Feed, d time.Duration) error {
	deadline := time.Now().Add(d)
	var prev []upstream.UpstreamStats
	stableSince := time.Now()
	for time.Now().Before(deadline) {
		cur := feed.Stats()
		same := prev != nil
		for i := range cur {
			if prev != nil && (cur[i].Resources.Listens != prev[i].Resources.Listens || cur[i].Lists.Listens != prev[i].Lists.Listens) {
				same = false
			}
			if cur[i].Lists.Open != 1 || cur[i].Resources.Open > 1 {
				same = false
			}
		}
		if !same {
			stableSince = time.Now()
		}
		if time.Since(stableSince) >= 500*time.Millisecond {
			return nil
		}
		prev = cur
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("the upstream listens did not settle")
}

// loopbackRTT measures 200 one-byte round trips over loopback TCP.
func loopbackRTT() []time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() { // echoes one connection; ends with it
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil
	}
	var out []time.Duration
	b := []byte{1}
	for range 200 {
		t0 := time.Now()
		if _, err := c.Write(b); err != nil {
			break
		}
		if _, err := io.ReadFull(c, b); err != nil {
			break
		}
		out = append(out, time.Since(t0))
	}
	c.Close()
	<-done
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 100*time.Microsecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%v [%v–%v]", round(median(ds)), round(slices.Min(ds)), round(slices.Max(ds)))
}

func verdict(ok bool) string {
	if ok {
		return "holds"
	}
	return "**does not hold**"
}

// child is the client process.
type child struct {
	cmdp *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

func startChild(self, url string, cfg config) (*child, error) {
	cmd := exec.Command(self, "-child", url, "-n", fmt.Sprint(cfg.n), "-open-concurrency", fmt.Sprint(cfg.conc))
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = cfg.log
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmdp: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// childEnv marks the client process (for the test binary, whose TestMain
// runs it).
const childEnv = "GATEWAYBENCH_CHILD"

func (c *child) read(v any) error {
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(line, v)
}

func (c *child) cmd(line string, v any) error {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		return err
	}
	return c.read(v)
}

// stop closes the client's input (it closes its listens and exits) and
// waits for it.
func (c *child) stop() {
	c.in.Close()
	_ = c.cmdp.Wait()
}
