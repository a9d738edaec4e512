package streamhttp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
)

// A client that stops reading its socket is cut off by the write deadline
// (its source closed as Disconnected), and meanwhile every other stream
// keeps receiving every notification promptly.
func TestStalledClient(t *testing.T) {
	const (
		readers      = 4
		writeTimeout = 3 * time.Second
		stallRounds  = 32 // 64 KiB each: 2 MiB, far more than the socket buffers
		afterCut     = 3  // rounds checked once the stalled stream is cut
	)
	pad := strings.Repeat("x", 64<<10)
	e := newEnv(t, nil, &config{
		WriteTimeout: writeTimeout,
		KeepAlive:    failsafe, // none during the test
	}, envConfig{sendBuffer: 16 << 10})

	// The stalled client: a raw connection that sends the POST and never
	// reads a byte.
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(16<<10))
	body := listenBody(`"stalled"`, `{"toolsListChanged":true}`)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s",
		e.ts.Listener.Addr(), len(body), body)
	require.NoError(t, err)
	stalled := streamOf(t, e.src, "stalled")

	// The reading clients each report the seq of every notification.
	type got struct {
		client int
		seq    int
	}
	seqs := make(chan got, readers*(stallRounds+afterCut))
	streams := make([]*listentest.Stream, readers)
	ended := make(chan error, readers)
	for i := range readers {
		id := fmt.Sprintf("r%d", i)
		s := e.listen(t, `"`+id+`"`, `{"toolsListChanged":true}`)
		s.message(t)
		streams[i] = streamOf(t, e.src, id)
		go func() {
			for {
				f, err := s.frame()
				if err != nil {
					ended <- err
					return
				}
				var m struct {
					Method string `json:"method"`
					Result any    `json:"result"`
					Params struct {
						Seq int `json:"seq"`
					} `json:"params"`
				}
				if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
					ended <- err
					return
				}
				if m.Result != nil {
					continue // the completion; the end follows
				}
				seqs <- got{i, m.Params.Seq}
			}
		}()
	}

	// round emits one large notification to every reader (and to the
	// stalled client while asked) and checks that every reader gets it.
	var slowest time.Duration
	round := func(seq int, toStalled bool) {
		t.Helper()
		ev := listen.ToolsListChanged().WithParams(map[string]any{"seq": seq, "pad": pad})
		start := time.Now()
		for _, st := range streams {
			st.Send(ev)
		}
		if toStalled {
			stalled.Send(ev)
		}
		for range readers {
			g := recv(t, seqs, fmt.Sprintf("round %d", seq))
			require.Equal(t, seq, g.seq, "client %d", g.client)
		}
		slowest = max(slowest, time.Since(start))
	}
	// While the stalled client's socket buffers fill and its write blocks,
	// the readers get every round. A round counts as delivered during the
	// stall when, after it, the stalled stream is still open but has not
	// pulled the events queued for it: its handler is stuck in a write.
	duringStall := 0
	for seq := range stallRounds {
		round(seq, true)
		select {
		case <-stalled.Closed():
		default:
			if pulls := len(stalled.Nexts()) - 1; pulls < seq {
				duringStall++
			}
		}
	}
	reason := reasonOf(t, stalled)
	assert.ErrorIs(t, reason, listen.ErrDisconnected)
	assert.ErrorIs(t, reason, os.ErrDeadlineExceeded, "cut by its write deadline")
	assert.Less(t, len(stalled.Nexts()), stallRounds+1, "a write to the stalled client blocked")
	assert.Positive(t, duringStall, "readers were served while the stalled write was pending")
	// And after it was cut.
	for seq := stallRounds; seq < stallRounds+afterCut; seq++ {
		round(seq, false)
	}
	assert.Less(t, slowest, writeTimeout, "no reader waited for the stalled client")
	t.Logf("slowest round %v; %d of %d rounds delivered during the stall; the stalled stream pulled %d events",
		slowest, duringStall, stallRounds, len(stalled.Nexts())-1)

	for _, st := range streams {
		st.End()
	}
	for range readers {
		assert.ErrorIs(t, recv(t, ended, "a reader's end"), io.EOF)
	}
	for _, st := range streams {
		assert.ErrorIs(t, reasonOf(t, st), listen.ErrComplete)
	}
}
