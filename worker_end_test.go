package listen_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
)

// End reaches a stream driven by hand: the worker hands its reason over as
// an outcome at once, even while a Next waits in the source, and ahead of
// nothing else; Terminal gives the message End's reason stands for.
func TestEndReachesAWorker(t *testing.T) {
	tests := []struct {
		name       string
		reason     error
		errorForm  bool   // Options.EndWithError
		wantMsg    string // a fragment of the terminal message
		wantReason string // Classify of the close reason
	}{
		{"revoked", listen.ErrRevoked, false, `"io.github.mcplisten/endReason":"revoked"`, "revoked"},
		{"revoked, error form", fmt.Errorf("%w: token t1", listen.ErrRevoked), true, `"message":"Subscription ended: access revoked"`, "revoked"},
		{"lifetime", listen.ErrLifetime, true, `"resultType":"complete"`, "lifetime"},
		{"shutdown", listen.ErrShutdown, false, `"resultType":"complete"`, "shutdown"},
		{"any other reason fails", errors.New("boom"), false, `"message":"Subscription source failed"`, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newTestSource()
				sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}),
					&listen.Options{Capabilities: allCaps, EndWithError: tt.errorForm})
				require.NoError(t, err)
				w, err := sub.StartWorker(context.Background())
				require.NoError(t, err)
				w.Continue()
				synctest.Wait() // the Next waits in the source

				sub.End(tt.reason)
				o := <-w.Outcomes()
				require.Error(t, o.Err)
				msg, reason := sub.Terminal(o.Err)
				assert.Contains(t, string(msg), tt.wantMsg)
				assert.Equal(t, tt.wantReason, listen.Classify(reason))
				sub.Close(reason)
				_, open := <-w.Outcomes()
				assert.False(t, open, "nothing after End's outcome")
				assert.Equal(t, 1, src.last().closeCount())
				assert.Equal(t, reason, sub.CloseReason())
			})
		})
	}
}

// An End made before the first Continue, or while an event waits for the
// owner to ask for it, comes first.
func TestEndBeforeAnyPull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		sub.End(listen.ErrExpired)
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		o := <-w.Outcomes()
		assert.ErrorIs(t, o.Err, listen.ErrExpired)
		sub.Close(o.Err)
		waitExited(w)
		assert.Empty(t, src.nexts, "no pull after End")
	})
}

// After an event, an End comes before any further pull: the owner's next
// Continue gets End's reason, and Next is not called again.
func TestEndBetweenPulls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		w.Continue()
		src.last().emit(listen.ToolsListChanged())
		o := <-w.Outcomes()
		require.NoError(t, o.Err)
		synctest.Wait()
		pulls := len(src.nexts)

		sub.End(listen.ErrRevoked)
		w.Continue()
		o = <-w.Outcomes()
		assert.ErrorIs(t, o.Err, listen.ErrRevoked)
		sub.Close(o.Err)
		waitExited(w)
		assert.Equal(t, pulls, len(src.nexts), "no pull after End")
	})
}

// Terminal reads every way a stream driven by hand ends.
func TestTerminal(t *testing.T) {
	sub := openSub(t, newTestSource(), jsonrpc.IntID(3), listen.Filter{"toolsListChanged": true})
	defer sub.Close(nil)
	tests := []struct {
		err        error
		wantMsg    string
		wantReason error
	}{
		{listen.ErrClosed, `"resultType":"complete"`, listen.ErrComplete},
		{io.EOF, `"resultType":"complete"`, listen.ErrComplete},
		{listen.ErrFellBehind, `endReason":"fell_behind"`, listen.ErrFellBehind},
		{listen.ErrShutdown, `"resultType":"complete"`, listen.ErrShutdown},
		{listen.Failed(io.ErrUnexpectedEOF), `"code":-32603`, listen.Failed(io.ErrUnexpectedEOF)},
		{io.ErrUnexpectedEOF, `"code":-32603`, listen.Failed(io.ErrUnexpectedEOF)},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			msg, reason := sub.Terminal(tt.err)
			assert.Contains(t, string(msg), tt.wantMsg)
			assert.Equal(t, tt.wantReason.Error(), reason.Error())
			decode(t, msg) // valid JSON
		})
	}
}

// End racing with pulls, many times: the owner gets End's reason exactly
// once, nothing after it, and Outcomes is closed once Close returns.
func TestEndRacingWithPulls(t *testing.T) {
	for round := range 300 {
		src := listentest.NewSource()
		sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}),
			&listen.Options{Capabilities: allCaps})
		require.NoError(t, err)
		st := <-src.Opened()
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		sent := make(chan struct{})
		go func() { // a publisher of a few events
			defer close(sent)
			for range 20 {
				st.Send(listen.ToolsListChanged())
				runtime.Gosched()
			}
		}()
		go func() { sub.End(listen.ErrRevoked) }()
		w.Continue()
		ends := 0
		for o := range w.Outcomes() {
			if o.Err == nil {
				require.Zero(t, ends, "round %d: an event after End's outcome", round)
				w.Continue()
				continue
			}
			ends++
			require.ErrorIs(t, o.Err, listen.ErrRevoked, "round %d", round)
			_, reason := sub.Terminal(o.Err)
			sub.Close(reason)
			select {
			case _, open := <-w.Outcomes():
				require.False(t, open, "round %d: an outcome after End's", round)
			default:
				require.Fail(t, "Outcomes open after Close", "round %d", round)
			}
		}
		require.Equal(t, 1, ends, "round %d", round)
		<-sent
	}
}
