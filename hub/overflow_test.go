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
