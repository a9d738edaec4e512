package hub_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/spec"
)

// EndListener ends a listener whose queue is full instead of dropping: its
// queue is freed, its pulls answer listen.ErrFellBehind, later
// publications skip it, and the others are untouched.
func TestEndListenerEndsTheListenerThatFellBehind(t *testing.T) {
	h := newHub(t, hub.Options{MaxBuffer: 2, Overflow: hub.EndListener})
	slow := openStream(t, h, "slow", toolsOnly)
	fast := openStream(t, h, "fast", toolsOnly)
	ready := readyChan(fast.(listen.NotifyStream))
	for seq, want := range []hub.Report{
		{Matched: 2, Buffered: 2},
		{Matched: 2, Buffered: 2},
	} {
		r, err := h.Publish(seqEvent(seq))
		require.NoError(t, err)
		require.Equal(t, want, r)
		assert.Equal(t, seq, seqOf(t, mustNext(t, fast)))
	}
	_, ok, err := fast.(listen.NotifyStream).TryNext() // poll: woken by the next event
	require.NoError(t, err)
	require.False(t, ok)

	r, err := h.Publish(seqEvent(2))
	require.NoError(t, err)
	assert.Equal(t, hub.Report{Matched: 2, Delivered: 1, Dropped: 3, Ended: 1}, r, "the new event and the full queue are lost")
	<-ready
	_, err = slow.Next()
	assert.ErrorIs(t, err, listen.ErrFellBehind)
	_, ok, err = slow.(listen.NotifyStream).TryNext()
	assert.True(t, ok)
	assert.ErrorIs(t, err, listen.ErrFellBehind)

	r, _ = h.Publish(seqEvent(3))
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r, "an ended listener is skipped")
	st := h.Stats()
	assert.Equal(t, uint64(1), st.FellBehind)
	assert.Equal(t, uint64(3), st.Dropped)
	assert.Equal(t, 1, st.Queued)
	assert.Equal(t, "end_listener", st.Overflow.String())

	slow.Close(listen.ErrFellBehind)
	assert.Equal(t, 1, h.Stats().Subscriptions, "the slow listener left")
	fast.Close(listen.ErrComplete)
	assert.Empty(t, h.CheckIndex())
}

// A subscription served on the hub whose client stops reading falls
// behind: it writes the ending (in either form), closes with
// listen.ErrFellBehind, and the hooks log it.
func TestFellBehindEndsTheSubscription(t *testing.T) {
	for _, withError := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			h := newHub(t, hub.Options{MaxBuffer: 1, Overflow: hub.EndListener, Logger: logger})
			req := request("slow")
			req.Notifications = toolsOnly
			req.ClientCapabilities = map[string]any{}
			sub, err := listen.Open(t.Context(), h, req, &listen.Options{
				Capabilities: listen.Capabilities{ToolsListChanged: true},
				EndWithError: withError,
			})
			require.NoError(t, err)
			var msgs []string
			block := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- sub.Serve(t.Context(), listen.Sink{Write: func(msg []byte) error {
					msgs = append(msgs, string(msg))
					if len(msgs) == 2 {
						<-block // the client stops reading after one notification
					}
					return nil
				}})
			}()
			synctest.Wait()
			h.ToolsListChanged() // written, the write blocks
			synctest.Wait()
			h.ToolsListChanged()                 // queued
			r := h.ToolsListChanged()            // over the bound
			assert.Equal(t, 1, r.Ended)          // ended
			assert.Equal(t, 0, h.Stats().Queued) // its queue freed at once
			close(block)
			reason := <-done
			assert.Equal(t, listen.ErrFellBehind, reason)
			require.Len(t, msgs, 3, "ack, one notification, the ending")
			last := decodeMsg(t, msgs[2])
			if withError {
				e := last["error"].(map[string]any)
				assert.EqualValues(t, spec.CodeEnded, e["code"])
				assert.Equal(t, "Subscription ended: client fell behind", e["message"])
			} else {
				meta := last["result"].(map[string]any)["_meta"].(map[string]any)
				assert.Equal(t, "fell_behind", meta[spec.MetaEndReason])
			}
			assert.Contains(t, logs.String(), "reason=fell_behind")
			assert.Contains(t, logs.String(), "policy=end_listener")
			assert.Equal(t, hub.Stats{MaxBuffer: 1, Overflow: hub.EndListener, Dropped: 2, FellBehind: 1}, h.Stats())
		})
	}
}

func decodeMsg(t *testing.T, msg string) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(msg), &out), msg)
	return out
}

// armedPuller is a hub listener's TryNextArmed, which the core's poller uses.
type armedPuller interface {
	TryNextArmed(core.Internal) (listen.Event, bool, bool, error)
}

// A puller that took the last queued event with TryNextArmed is handed the
// next one while it may still be writing: that event counts against
// MaxBuffer with the queue, so every overflow policy acts after MaxBuffer
// events held, keeps the order, and the handed-over event is not counted as
// queued.
func TestArmedPullerHandOverCountsAgainstMaxBuffer(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    hub.Options
		reports []hub.Report // of events 1, 2, 3
		pulls   []int        // the seqs pulled after them
		ended   bool         // then listen.ErrFellBehind
	}{
		{"DropOldest/2", hub.Options{MaxBuffer: 2},
			[]hub.Report{{Matched: 1, Delivered: 1}, {Matched: 1, Buffered: 1}, {Matched: 1, Buffered: 1, Dropped: 1}},
			[]int{2, 3}, false},
		{"DropOldest/1", hub.Options{MaxBuffer: 1},
			[]hub.Report{{Matched: 1, Delivered: 1}, {Matched: 1, Buffered: 1, Dropped: 1}, {Matched: 1, Buffered: 1, Dropped: 1}},
			[]int{3}, false},
		{"DropNewest/2", hub.Options{MaxBuffer: 2, Overflow: hub.DropNewest},
			[]hub.Report{{Matched: 1, Delivered: 1}, {Matched: 1, Buffered: 1}, {Matched: 1, Dropped: 1}},
			[]int{1, 2}, false},
		{"EndListener/2", hub.Options{MaxBuffer: 2, Overflow: hub.EndListener},
			[]hub.Report{{Matched: 1, Delivered: 1}, {Matched: 1, Buffered: 1}, {Matched: 1, Dropped: 3, Ended: 1}},
			nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHub(t, c.opts)
			st := openStream(t, h, "armed", toolsOnly)
			p := st.(armedPuller)
			_, err := h.Publish(seqEvent(0))
			require.NoError(t, err)
			ev, ok, armed, err := p.TryNextArmed(core.Internal{})
			require.NoError(t, err)
			require.True(t, ok)
			require.True(t, armed, "the last queued event was taken")
			assert.Equal(t, 0, seqOf(t, ev))
			for i, want := range c.reports {
				r, err := h.Publish(seqEvent(i + 1))
				require.NoError(t, err)
				assert.Equal(t, want, r, "event %d", i+1)
			}
			if !c.ended {
				assert.Equal(t, len(c.pulls)-1, h.Stats().Queued, "the handed-over event is not queued")
			}
			for i, want := range c.pulls {
				ev, ok, armed, err := p.TryNextArmed(core.Internal{})
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, want, seqOf(t, ev))
				assert.Equal(t, i == len(c.pulls)-1, armed, "armed only by the last")
			}
			if c.ended {
				_, ok, _, err := p.TryNextArmed(core.Internal{})
				assert.True(t, ok)
				assert.ErrorIs(t, err, listen.ErrFellBehind, "the ending, not the backlog")
			}
			assert.Equal(t, 0, h.Stats().Queued)
			st.Close(nil)
		})
	}
}
