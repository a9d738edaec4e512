package listentest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

func request(id string) *listen.Request {
	return &listen.Request{
		ID:              jsonrpc.StringID(id),
		ProtocolVersion: spec.ProtocolVersion,
		Notifications:   listen.Filter{"toolsListChanged": true},
		Transport:       listen.Transport{Kind: "direct"},
		Auth:            "alice",
	}
}

func TestStreamFollowsTheStreamContract(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		_, s, err := src.Open(context.Background(), request("a"), listen.Filter{"toolsListChanged": true})
		require.NoError(t, err)
		st := s.(*listentest.Stream)
		assert.Equal(t, "a", st.ID)
		assert.Equal(t, "direct", st.Transport)
		assert.Equal(t, "alice", st.Auth)
		assert.Equal(t, listen.Filter{"toolsListChanged": true}, st.Supported)

		st.Send(listen.ToolsListChanged())
		ev, err := st.Next()
		require.NoError(t, err)
		assert.Equal(t, listen.KindToolsListChanged, ev.Kind)

		got := make(chan error, 1)
		go func() { _, err := st.Next(); got <- err }()
		synctest.Wait()
		<-st.Nexts()
		<-st.Nexts()
		assert.Panics(t, func() { _, _ = st.Next() }, "a second Next in flight breaks the contract")
		assert.Empty(t, src.Closed())
		st.Close(listen.Cancelled("bye"))
		assert.ErrorIs(t, <-got, listen.ErrClosed, "Close releases a blocked Next")
		assert.Same(t, st, <-src.Closed(), "the first Close announces the stream")
		st.Close(listen.ErrComplete)
		assert.Equal(t, 2, st.Closes())
		assert.ErrorIs(t, st.Reason(), listen.ErrCancelled, "only the first Close counts")
		_, err = st.Next()
		assert.ErrorIs(t, err, listen.ErrClosed, "Next after Close")
		assert.Empty(t, src.Closed(), "only the first Close is announced")
	})
}

func TestEndAndFailAreQueuedInOrder(t *testing.T) {
	src := listentest.NewSource()
	_, s, err := src.Open(context.Background(), request("a"), listen.Filter{})
	require.NoError(t, err)
	st := s.(*listentest.Stream)
	boom := errors.New("boom")
	st.Send(listen.ToolsListChanged())
	st.Fail(boom)
	st.End()
	_, err = st.Next()
	assert.NoError(t, err)
	_, err = st.Next()
	assert.ErrorIs(t, err, boom)
	_, err = st.Next()
	assert.ErrorIs(t, err, listen.ErrClosed)
}

func TestSourceOptions(t *testing.T) {
	src := listentest.NewSource()
	src.Accept = func(listen.Filter) listen.Filter { return listen.Filter{} }
	acc, _, err := src.Open(context.Background(), request("a"), listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{}, acc)

	src.OpenErr = errors.New("no")
	_, _, err = src.Open(context.Background(), request("b"), listen.Filter{})
	assert.EqualError(t, err, "no")

	gated := listentest.NewSource()
	gate := make(chan struct{})
	gated.Gate = gate
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = gated.Open(ctx, request("c"), listen.Filter{})
	assert.ErrorIs(t, err, context.Canceled, "a gated open ends with its context")
	close(gate)
	_, _, err = gated.Open(context.Background(), request("c"), listen.Filter{})
	assert.NoError(t, err)
}

// BeforeOpen runs first, with Open's context and request: its error fails
// the open (as it is, before Gate and OpenErr), and it may block until the
// context ends.
func TestBeforeOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		refused := errors.New("refused")
		src.OpenErr = errors.New("not reached")
		src.Gate = make(chan struct{}) // never opened: not reached either
		var seen []string
		src.BeforeOpen = func(ctx context.Context, req *listen.Request) error {
			seen = append(seen, req.ID.String())
			if req.ID.String() == "slow" {
				<-ctx.Done()
				return context.Cause(ctx)
			}
			return refused
		}
		_, st, err := src.Open(context.Background(), request("a"), listen.Filter{})
		assert.Same(t, refused, err)
		assert.Nil(t, st)

		ctx, cancel := context.WithCancelCause(context.Background())
		got := make(chan error, 1)
		go func() {
			_, _, err := src.Open(ctx, request("slow"), listen.Filter{})
			got <- err
		}()
		synctest.Wait()
		assert.Empty(t, got, "BeforeOpen blocks the Open")
		cancel(listen.Cancelled("gone"))
		assert.ErrorIs(t, <-got, listen.ErrCancelled)
		assert.Equal(t, []string{"a", "slow"}, seen)
		assert.Empty(t, src.Streams())
		assert.Empty(t, src.Opened())

		src.BeforeOpen = func(context.Context, *listen.Request) error { return nil }
		src.Gate, src.OpenErr = nil, nil
		_, st, err = src.Open(context.Background(), request("b"), listen.Filter{})
		require.NoError(t, err)
		assert.Same(t, st, <-src.Opened())
	})
}

// RequestID keeps the id's exact token: 1 and "1" have the same string
// form (ID), and Stream finds the later one.
func TestRequestIDIsTheExactToken(t *testing.T) {
	src := listentest.NewSource()
	open := func(id jsonrpc.ID) *listentest.Stream {
		req := request("")
		req.ID = id
		_, st, err := src.Open(context.Background(), req, listen.Filter{})
		require.NoError(t, err)
		return st.(*listentest.Stream)
	}
	num, str := open(jsonrpc.IntID(1)), open(jsonrpc.StringID("1"))
	assert.Equal(t, "1", num.ID)
	assert.Equal(t, "1", str.ID)
	assert.Equal(t, `1`, num.RequestID.Raw())
	assert.Equal(t, `"1"`, str.RequestID.Raw())
	assert.Same(t, str, src.Stream(context.Background(), "1"))
}

func TestStreamWaitsForItsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		found := make(chan *listentest.Stream, 1)
		go func() { found <- src.Stream(context.Background(), "late") }()
		synctest.Wait()
		_, _, err := src.Open(context.Background(), request("late"), listen.Filter{})
		require.NoError(t, err)
		st := <-found
		require.NotNil(t, st)
		assert.Same(t, st, <-src.Opened())
		assert.Equal(t, []*listentest.Stream{st}, src.Streams())

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.Nil(t, src.Stream(ctx, "never"))
	})
}

func TestSSEReader(t *testing.T) {
	body := ": keep-alive\n\n" +
		"event: message\ndata: {\"n\":1}\n\n" +
		"event: message\r\nid: 7\r\nretry: 1500\r\ndata: a\r\ndata: b\r\n\r\n" +
		"event: message\ndata: {\"n\":2}\n\n"
	r := listentest.NewSSEReader(strings.NewReader(body))
	ev, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, listentest.SSEEvent{Comment: "keep-alive", IsComment: true}, ev)
	m, err := r.Message()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": jsonNumber("1")}, m)
	ev, err = r.Next()
	require.NoError(t, err)
	assert.Equal(t, listentest.SSEEvent{Event: "message", ID: "7", Retry: "1500", Data: "a\nb"}, ev)
	m, err = r.Message()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": jsonNumber("2")}, m)
	_, err = r.Next()
	assert.ErrorIs(t, err, io.EOF)

	_, err = listentest.NewSSEReader(strings.NewReader("event: message\ndata: x")).Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = listentest.NewSSEReader(strings.NewReader("bogus: 1\n\n")).Next()
	assert.Error(t, err)
	_, err = listentest.NewSSEReader(strings.NewReader("event: other\ndata: {}\n\n")).Message()
	assert.Error(t, err)
	_, err = listentest.NewSSEReader(strings.NewReader("event: message\ndata: {\n\n")).Message()
	assert.Error(t, err)
}

// Data is the next message event's data as sent, comments skipped; it ends
// with io.EOF and fails on another event type.
func TestSSEReaderData(t *testing.T) {
	r := listentest.NewSSEReader(strings.NewReader(": keep-alive\n\nevent: message\ndata: {\"n\": 1.50}\n\n: bye\n\n"))
	d, err := r.Data()
	require.NoError(t, err)
	assert.Equal(t, `{"n": 1.50}`, string(d))
	_, err = r.Data()
	assert.ErrorIs(t, err, io.EOF)
	_, err = listentest.NewSSEReader(strings.NewReader("event: other\ndata: {}\n\n")).Data()
	assert.EqualError(t, err, `listentest: SSE event "other", want message`)
}

func jsonNumber(s string) any { return json.Number(s) }

// ReadMessages reads a JSON answer as its one message and an SSE answer as
// the data of its message events, by the Content-Type.
func TestReadMessages(t *testing.T) {
	tests := []struct {
		contentType, body string
		want              []string
		err               string
	}{
		{"application/json", " {\"id\":1}\n", []string{`{"id":1}`}, ""},
		{"application/json; charset=utf-8", `{"id":2}`, []string{`{"id":2}`}, ""},
		{"text/event-stream", ": ping\n\nevent: message\ndata: {\"a\":1}\n\nevent: message\ndata: {\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}, ""},
		{"text/event-stream", "", nil, ""},
		{"text/event-stream", "event: message\ndata: {", nil, "unexpected EOF"},
		{"text/plain", "404 page not found", nil, `listentest: Content-Type "text/plain", want application/json or text/event-stream`},
	}
	for _, tt := range tests {
		resp := &http.Response{Header: http.Header{"Content-Type": {tt.contentType}}, Body: io.NopCloser(strings.NewReader(tt.body))}
		got, err := listentest.ReadMessages(resp)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, "%s %q", tt.contentType, tt.body)
			continue
		}
		require.NoError(t, err)
		var texts []string
		for _, m := range got {
			texts = append(texts, string(m))
		}
		assert.Equal(t, tt.want, texts, "%s %q", tt.contentType, tt.body)
	}
}

// Closed tells which streams ended, in the order of their first Close.
func TestSourceClosedInOrder(t *testing.T) {
	src := listentest.NewSource()
	var streams []*listentest.Stream
	for _, id := range []string{"a", "b", "c"} {
		_, st, err := src.Open(context.Background(), request(id), listen.Filter{})
		require.NoError(t, err)
		streams = append(streams, st.(*listentest.Stream))
	}
	streams[2].Close(listen.ErrComplete)
	streams[0].Close(listen.Cancelled(""))
	streams[2].Close(nil)
	assert.Equal(t, "c", (<-src.Closed()).ID)
	st := <-src.Closed()
	assert.Equal(t, "a", st.ID)
	assert.ErrorIs(t, st.Reason(), listen.ErrCancelled)
	assert.Empty(t, src.Closed(), "b is open, c was announced once")
}
