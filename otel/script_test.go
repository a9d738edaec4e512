package otel_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func listenBody(id, filter string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` + meta + `,"notifications":` + filter + `}}`
}

// frames reads an SSE body onto a channel: "message" for each event (with
// its data), "keep-alive" for each comment, closed at the end.
func frames(body io.Reader) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		r := listentest.NewSSEReader(body)
		for {
			ev, err := r.Next()
			switch {
			case err != nil:
				return
			case ev.IsComment:
				out <- "keep-alive"
			default:
				out <- ev.Data
			}
		}
	}()
	return out
}

// The scripted sequence over Streamable HTTP, on the fake clock of a
// synctest bubble: two listens open (one reads, one never does), a third is
// refused at capacity, two more are refused (validation, auth); two
// publications reach the reader, fill the stalled stream's queue and
// overflow it; the stalled stream is cut by its write deadline while the
// reader gets a keep-alive; the hub completes the reader. Every instrument
// is read back with the manual reader at each step and must hold exactly
// the predicted series.
func TestScriptHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		h, err := hub.New(withMetrics(m, hub.Options{MaxBuffer: 1}))
		require.NoError(t, err)
		const (
			keepAlive    = 3 * time.Second
			writeTimeout = 5 * time.Second
		)
		var closes []string
		lopts := listen.Options{
			Capabilities:     listen.Capabilities{ToolsListChanged: true},
			MaxStreams:       2,
			MaxStreamsPerKey: -1, // the script's clients share one address
			// A hook set before Instrument still runs.
			OnClose: func(_ *listen.Subscription, reason error) { closes = append(closes, listen.Classify(reason)) },
		}
		m.Instrument(&lopts)
		opts := streamhttp.Options{
			KeepAlive:    keepAlive,
			WriteTimeout: writeTimeout,
			Authenticate: func(r *http.Request) (any, error) {
				if r.Header.Get("X-Deny") != "" {
					return nil, errors.New("denied")
				}
				return nil, nil
			},
		}
		m.InstrumentHTTP(&opts)
		lh, err := streamhttp.New(listen.NewServer(m.Source(h), lopts), opts)
		require.NoError(t, err)
		l := newPipeListener()
		srv := &http.Server{Handler: lh}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		tr := &http.Transport{DialContext: l.Dial}
		client := &http.Client{Transport: tr}
		post := func(body string, hdr ...string) *http.Response {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, "http://pipe/mcp", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			return resp
		}
		const (
			tr1    = "mcp.listen.transport=streamable_http"
			tools  = "mcp.listen.notification.kind=tools_list_changed"
			opened = "mcp.listen.streams.opened{" + tr1 + "}"
			open   = "mcp.listen.streams.open{" + tr1 + "}"
		)
		// From Instrument on: the Server's stream limit, and the series at
		// zero (stdio's too: the up-down counter's zero is read back).
		want := map[string]int64{"mcp.listen.streams.capacity{}": 2, open: 0,
			"mcp.listen.streams.open{mcp.listen.transport=stdio}": 0}
		assert.Equal(t, want, series(t, reader))

		// Open: a reader...
		resp := post(listenBody(`"reader"`, `{"toolsListChanged":true}`))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		msgs := frames(resp.Body)
		require.Contains(t, <-msgs, "notifications/subscriptions/acknowledged")
		want[open], want[opened] = 1, 1
		assert.Equal(t, want, series(t, reader))

		// ... and a client that sends its listen and never reads.
		stalled, err := l.Dial(context.Background(), "", "")
		require.NoError(t, err)
		body := listenBody(`"stalled"`, `{"toolsListChanged":true}`)
		_, err = fmt.Fprintf(stalled, "POST /mcp HTTP/1.1\r\nHost: pipe\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		synctest.Wait() // its acknowledgement's write is blocked
		want[open], want[opened] = 2, 2
		assert.Equal(t, want, series(t, reader))

		// Refusals: capacity, validation, auth.
		resp3 := post(listenBody(`"third"`, `{"toolsListChanged":true}`))
		assert.Equal(t, http.StatusServiceUnavailable, resp3.StatusCode)
		resp3.Body.Close()
		resp4 := post(`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"notifications":[]}}`)
		assert.Equal(t, http.StatusBadRequest, resp4.StatusCode)
		resp4.Body.Close()
		resp5 := post(listenBody(`"denied"`, `{}`), "X-Deny", "1")
		assert.Equal(t, http.StatusUnauthorized, resp5.StatusCode)
		resp5.Body.Close()
		refused := "mcp.listen.requests.refused{mcp.listen.refusal.cause=%s," + tr1 + "}"
		want[fmt.Sprintf(refused, listenotel.CauseCapacity)] = 1
		want[fmt.Sprintf(refused, listenotel.CauseValidation)] = 1
		want[fmt.Sprintf(refused, listenotel.CauseAuth)] = 1
		assert.Equal(t, want, series(t, reader))

		// Publish twice: the reader gets both; the stalled stream queues
		// the first (MaxBuffer 1), and the second overflows its queue.
		r1 := h.ToolsListChanged()
		require.Contains(t, <-msgs, "notifications/tools/list_changed")
		r2 := h.ToolsListChanged()
		require.Contains(t, <-msgs, "notifications/tools/list_changed")
		assert.Equal(t, 0, r1.Dropped)
		assert.Equal(t, 1, r2.Dropped)
		synctest.Wait() // the reader's stream asked for the next event
		want["mcp.listen.notifications.published{"+tools+"}"] = 2
		want["mcp.listen.notifications.dropped{"+tools+"}"] = 1
		want["mcp.listen.notifications.delivered{"+tools+","+tr1+"}"] = 2
		want["mcp.listen.fanout.duration{"+tools+"}"] = 2
		assert.Equal(t, want, series(t, reader))
		p := histogram(t, reader, "mcp.listen.fanout.duration", listenotel.AttrNotificationKind.String("tools_list_changed"))
		assert.Equal(t, listenotel.DefaultFanoutBuckets, p.Bounds)
		assert.Zero(t, p.Sum, "no fake time passes during a fan-out")

		// The write deadline cuts the stalled stream; the reader, idle for
		// as long, gets one keep-alive meanwhile.
		time.Sleep(writeTimeout)
		require.Equal(t, "keep-alive", <-msgs)
		synctest.Wait()
		want[open] = 1
		want["mcp.listen.streams.closed{mcp.listen.close.reason=disconnected,"+tr1+"}"] = 1
		want["mcp.listen.streams.write_timeouts{"+tr1+"}"] = 1
		want["mcp.listen.keepalives.sent{"+tr1+"}"] = 1
		assert.Equal(t, want, series(t, reader))
		stalled.Close()

		// Close: the hub completes the reader.
		ended, end := context.WithCancel(context.Background())
		end()
		_ = h.Shutdown(ended) // completes every listener now, waits for nothing
		require.Contains(t, <-msgs, `"resultType":"complete"`)
		_, more := <-msgs
		require.False(t, more)
		resp.Body.Close()
		synctest.Wait()
		want[open] = 0
		want["mcp.listen.streams.closed{mcp.listen.close.reason=complete,"+tr1+"}"] = 1
		assert.Equal(t, want, series(t, reader))
		assert.Equal(t, []string{"disconnected", "complete"}, closes)

		require.NoError(t, lh.Shutdown(context.Background()))
		require.NoError(t, srv.Close())
		tr.CloseIdleConnections()
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	})
}

// The same instruments over stdio: an open, a capacity refusal, a delivered
// notification, a client cancellation, and the end of the input.
func TestScriptStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		h, err := hub.New(withMetrics(m, hub.Options{}))
		require.NoError(t, err)
		opts := listen.Options{Capabilities: listen.Capabilities{ResourcesSubscribe: true}, MaxStreams: 1}
		m.Instrument(&opts)
		srv, err := stdio.New(listen.NewServer(m.Source(h), opts), stdio.Options{})
		require.NoError(t, err)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() {
			served <- srv.Serve(context.Background(), inR, outW)
			outW.Close()
		}()
		lines := make(chan string, 16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		send := func(line string) {
			_, err := io.WriteString(inW, line+"\n")
			require.NoError(t, err)
		}
		const (
			tr1 = "mcp.listen.transport=stdio"
			upd = "mcp.listen.notification.kind=resource_updated"
		)

		send(listenBody(`1`, `{"resourceSubscriptions":["file:///a"]}`))
		require.Contains(t, <-lines, "notifications/subscriptions/acknowledged")
		send(listenBody(`2`, `{"resourceSubscriptions":["file:///a"]}`))
		require.Contains(t, <-lines, `"Server subscription capacity exhausted"`)
		_, err = h.ResourceUpdated("file:///a")
		require.NoError(t, err)
		require.Contains(t, <-lines, "notifications/resources/updated")
		synctest.Wait()
		want := map[string]int64{
			"mcp.listen.streams.capacity{}":                                              1,
			"mcp.listen.streams.open{mcp.listen.transport=streamable_http}":              0,
			"mcp.listen.streams.open{" + tr1 + "}":                                       1,
			"mcp.listen.streams.opened{" + tr1 + "}":                                     1,
			"mcp.listen.requests.refused{mcp.listen.refusal.cause=capacity," + tr1 + "}": 1,
			"mcp.listen.notifications.published{" + upd + "}":                            1,
			"mcp.listen.notifications.delivered{" + upd + "," + tr1 + "}":                1,
			"mcp.listen.fanout.duration{" + upd + "}":                                    1,
		}
		assert.Equal(t, want, series(t, reader))

		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		synctest.Wait()
		want["mcp.listen.streams.open{"+tr1+"}"] = 0
		want["mcp.listen.streams.closed{mcp.listen.close.reason=cancelled,"+tr1+"}"] = 1
		assert.Equal(t, want, series(t, reader))

		require.NoError(t, inW.Close())
		require.NoError(t, <-served)
		_, more := <-lines
		assert.False(t, more)
	})
}
