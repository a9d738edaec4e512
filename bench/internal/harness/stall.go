package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StallRun is one stalled-client scenario run on a fresh server process:
// StallStreams-1 healthy streams, plus (if Stalled) one client that sent
// its listen and never reads its socket; every stream watches the same long
// resource URI and trigger_resource_update is called StallTriggers times
// back to back.
type StallRun struct {
	Stalled bool
	Healthy int
	// URIBytes is the padding of the watched URI; NoteBytes the size of one
	// resources/updated SSE event to a healthy stream.
	URIBytes, NoteBytes int
	// Round is the round of runs this one belongs to.
	Round int
	// Lags are every healthy stream's delivery lag for every trigger, in
	// nanoseconds: from the start of that trigger's tools/call to the
	// stream's notification (the k-th notification of a stream belongs to
	// trigger k).
	Lags []float64 `json:"-"`
	// Undelivered counts the healthy streams' notifications that never
	// arrived: of the triggers sent, and of the triggers not sent because
	// a call blocked (the server was stuck: those updates were due too).
	Undelivered int
	// NotSent is the number of triggers not sent because a call blocked.
	NotSent int
	// P50, P99 and Max summarise Lags, undelivered notifications counted as
	// infinitely late (Never).
	P50, P99, Max time.Duration
	// Sent is the number of triggers sent; BlockedAt is the index of the
	// trigger whose call did not return within StallCallTimeout, or -1.
	Sent, BlockedAt int
	// TriggerP99 is each trigger's p99 lag over the healthy streams (Never
	// when more than 1% of them never got it; Never for a trigger not sent).
	TriggerP99 []time.Duration
	// BlockIndex is, in the stalled mode, the first trigger whose
	// notification did not fit in the stalled client's socket buffers (the
	// number of updates the stalled client had received) or the blocked
	// trigger, whichever is first; -1 in the control mode. BeforeP99 and
	// AfterP99 are the medians of TriggerP99 before and from it: a
	// comparison within one run, immune to the machine's load changing
	// between runs.
	BlockIndex          int
	BeforeP99, AfterP99 time.Duration
	// Calls are the trigger calls' durations.
	Calls []time.Duration
	// Total is from the first trigger's start to the last healthy delivery.
	Total time.Duration
	Fate  *StalledFate `json:",omitempty"`
	// Problems are notes about things that went wrong.
	Problems []string
}

// StalledFate is what happened to the stalled client's stream.
type StalledFate struct {
	// Registered reports that the server counted the stalled listen as open
	// (expvar, ours only); nil when unknown.
	Registered *bool `json:",omitempty"`
	// CutAfter is when the server-side socket left ESTABLISHED, from the
	// first trigger's start; zero if it was still established when observing
	// stopped, Observed after the first trigger's start.
	CutAfter, Observed time.Duration
	// CutBeforeWatch reports that the socket had already left ESTABLISHED
	// when watching began (after the last healthy delivery): CutAfter is
	// then an upper bound.
	CutBeforeWatch bool `json:",omitempty"`
	// ServerState is the server-side TCP state when observing stopped.
	ServerState string
	// MaxSendQ and MaxRecvQ are the most bytes seen queued in the server's
	// send buffer and in the stalled client's receive buffer.
	MaxSendQ, MaxRecvQ int64
	// Read is what reading the socket afterwards found: the
	// acknowledgement, how many resources/updated notifications, how many
	// bytes, and how the stream ended ("EOF", "still open", or the error).
	GotAck  bool
	Updates int
	Bytes   int64
	End     string
}

// Never stands for an infinite lag: a notification that never arrived.
const Never = time.Duration(math.MaxInt64)

// lagQuantile is the q-quantile of lags (ns) with undelivered more samples
// at infinity.
func lagQuantile(lags []float64, undelivered int, q float64) time.Duration {
	n := len(lags) + undelivered
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(n))) - 1
	i = min(max(i, 0), n-1)
	if i >= len(lags) {
		return Never
	}
	return time.Duration(sortedCopy(lags)[i])
}

// medianDuration is the (upper) median of ds; Never sorts last.
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func stallURI(n int) string { return "test://static/" + strings.Repeat("a", n) }

// noteBytes is the size of the SSE event that carries resources/updated for
// uri to a stream with a 7-digit id, as ours and the floor frame it.
func noteBytes(uri string) int {
	return len(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1000000},"uri":""}}` + "\n\n" + uri)
}

// stall runs the stalled-client scenario once on a fresh process of b.
func stall(ctx context.Context, cfg *Config, b *serverBin, tmp string, stalled bool, uriBytes int) (*StallRun, error) {
	p, err := start(ctx, b, tmp)
	if err != nil {
		return nil, err
	}
	defer p.kill()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}

	uri := stallURI(uriBytes)
	filter := map[string]any{"resourceSubscriptions": []string{uri}}
	healthy := cfg.StallStreams - 1
	r := &StallRun{Stalled: stalled, Healthy: healthy, URIBytes: uriBytes, NoteBytes: noteBytes(uri)}

	var raw *net.TCPConn
	if stalled {
		raw, err = rawListen(ctx, p.addr, 1_000_000, filter, cfg.StallRcvBuf)
		if err != nil {
			return nil, fmt.Errorf("stalled listen: %w", err)
		}
		defer raw.Close()
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
	bd := newBoard(msgResourceUpdated, cfg.StallTriggers, healthy)
	st := newStreams(ctx, client, p.url(), bd, min(64<<10, max(4096, uriBytes+1024)))
	defer st.close()
	if opened, refused, _, err := st.openAll(healthy, cfg.OpenConcurrency, filter); err != nil || opened < healthy {
		return nil, fmt.Errorf("opening %d healthy listens: %d opened, %d refused: %v", healthy, opened, refused, err)
	}

	var fate *StalledFate
	if stalled {
		fate = &StalledFate{}
		r.Fate = fate
		if v, ok := readVars(ctx, client, p); ok && v.Active >= 0 {
			reg := v.Active == healthy+1
			fate.Registered = &reg
		}
	}

	// One trigger at a time: the next one is sent once the previous call
	// returned and every healthy stream got its notification, so a lag is
	// one update's delivery, not a backlog.
	first := time.Now()
	starts := make([]time.Time, 0, cfg.StallTriggers)
	r.BlockedAt = -1
	var lastCall time.Time
	for k := range cfg.StallTriggers {
		starts = append(starts, time.Now())
		cctx, cancel := context.WithTimeout(ctx, cfg.StallCallTimeout)
		err := callTool(cctx, client, p.url(), 1000+k, "trigger_resource_update", map[string]any{"uri": uri})
		r.Calls = append(r.Calls, time.Since(starts[k]))
		cancel()
		lastCall = time.Now()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			// The server is stuck in this call: send no more triggers.
			r.BlockedAt = k
			r.Problems = append(r.Problems, fmt.Sprintf("trigger %d: %v", k, err))
			break
		}
		if err := bd.wait(ctx, k, cfg.DeliveryTimeout); err != nil {
			r.Problems = append(r.Problems, err.Error())
			break
		}
	}
	var lastAt int64
	for k, t0 := range starts {
		base := t0.UnixNano()
		var lags []float64
		missing := 0
		for _, a := range bd.at[k] {
			if a == 0 {
				missing++
				continue
			}
			lags = append(lags, float64(a-base))
			lastAt = max(lastAt, a)
		}
		r.Lags = append(r.Lags, lags...)
		r.Undelivered += missing
		r.TriggerP99 = append(r.TriggerP99, lagQuantile(lags, missing, 0.99))
	}
	r.Sent = len(starts)
	r.NotSent = cfg.StallTriggers - r.Sent
	r.Undelivered += r.NotSent * healthy
	for range r.NotSent {
		r.TriggerP99 = append(r.TriggerP99, Never)
	}
	r.BlockIndex = -1
	r.Total = time.Unix(0, lastAt).Sub(first)
	r.P50, r.P99, r.Max = lagQuantile(r.Lags, r.Undelivered, 0.50), lagQuantile(r.Lags, r.Undelivered, 0.99), lagQuantile(r.Lags, r.Undelivered, 1)
	if n := bd.extra.Load(); n > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d notifications beyond one per trigger", n))
	}

	if stalled {
		// Watch the stalled socket until the server closes it or the
		// observation time is over. Not earlier: a read of /proc/net/tcp
		// costs milliseconds of kernel time, which would slow the healthy
		// streams being measured.
		watch := watchSocket(p.addr, raw.LocalAddr().String())
		defer watch.stop()
		deadline := lastCall.Add(cfg.StallObserve)
		for time.Now().Before(deadline) && !watch.closed() {
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
		}
		watch.stop()
		ws := watch.result()
		if !ws.closedAt.IsZero() {
			fate.CutAfter = ws.closedAt.Sub(first)
			fate.CutBeforeWatch = ws.closedAtFirstPoll
		}
		fate.Observed = time.Since(first)
		fate.ServerState, fate.MaxSendQ, fate.MaxRecvQ = ws.state, ws.maxSendQ, ws.maxRecvQ
		readStalled(raw, fate, min(2*time.Second, max(200*time.Millisecond, cfg.StallObserve)))
		r.BlockIndex = fate.Updates
		if r.BlockedAt >= 0 {
			r.BlockIndex = min(r.BlockIndex, r.BlockedAt)
		}
		if b := r.BlockIndex; b > 0 && b < len(r.TriggerP99) {
			r.BeforeP99, r.AfterP99 = medianDuration(r.TriggerP99[:b]), medianDuration(r.TriggerP99[b:])
		}
	}
	st.closing.Store(true)
	st.close()
	r.Problems = append(r.Problems, st.unexpected...)
	return r, nil
}

// readStalled reads what the stalled socket holds, then tells how it ended
// ("still open" when nothing came for quiet).
func readStalled(c *net.TCPConn, f *StalledFate, quiet time.Duration) {
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	lr := newLineReader(c, 64<<10)
	for {
		line, _, err := lr.next()
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, io.EOF):
				f.End = "EOF (closed by the server)"
			case errors.As(err, &ne) && ne.Timeout():
				f.End = "still open"
			default:
				f.End = err.Error()
			}
			f.Bytes = lr.bytes
			return
		}
		switch classify(line) {
		case msgAck:
			f.GotAck = true
		case msgResourceUpdated:
			f.Updates++
		}
	}
}

// sockWatch polls /proc/net/tcp for the server side of one connection.
type sockWatch struct {
	serverAddr, clientAddr string
	done                   chan struct{}
	stopOnce               sync.Once
	finished               chan struct{}

	mu  sync.Mutex
	res watchResult
}

type watchResult struct {
	state              string
	closedAt           time.Time
	polls              int
	closedAtFirstPoll  bool
	maxSendQ, maxRecvQ int64
}

func watchSocket(serverAddr, clientAddr string) *sockWatch {
	w := &sockWatch{serverAddr: hexAddr(serverAddr), clientAddr: hexAddr(clientAddr),
		done: make(chan struct{}), finished: make(chan struct{})}
	go w.loop() // ends on stop, which waits for it
	return w
}

func (w *sockWatch) loop() {
	defer close(w.finished)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		w.poll()
		select {
		case <-w.done:
			return
		case <-t.C:
		}
	}
}

// TCP states of /proc/net/tcp.
var tcpStates = map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}

func (w *sockWatch) poll() {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return
	}
	defer f.Close()
	serverState := ""
	var sendQ, recvQ int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 5 {
			continue
		}
		q := strings.SplitN(fl[4], ":", 2)
		if len(q) != 2 {
			continue
		}
		tx, _ := strconv.ParseInt(q[0], 16, 64)
		rx, _ := strconv.ParseInt(q[1], 16, 64)
		switch {
		case fl[1] == w.serverAddr && fl[2] == w.clientAddr:
			serverState = tcpStates[fl[3]]
			sendQ = tx
		case fl[1] == w.clientAddr && fl[2] == w.serverAddr:
			recvQ = rx
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if serverState == "" {
		serverState = "gone"
	}
	w.res.state = serverState
	w.res.maxSendQ = max(w.res.maxSendQ, sendQ)
	w.res.maxRecvQ = max(w.res.maxRecvQ, recvQ)
	w.res.polls++
	if serverState != "ESTABLISHED" && w.res.closedAt.IsZero() {
		w.res.closedAt = time.Now()
		w.res.closedAtFirstPoll = w.res.polls == 1
	}
}

func (w *sockWatch) closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.res.closedAt.IsZero()
}

func (w *sockWatch) stop() {
	w.stopOnce.Do(func() { close(w.done) })
	<-w.finished
}

func (w *sockWatch) result() watchResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res
}

// hexAddr writes an IPv4 host:port as /proc/net/tcp does ("0100007F:1F90").
func hexAddr(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return ""
	}
	ip := net.ParseIP(host).To4()
	pn, _ := strconv.Atoi(port)
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], pn)
}
