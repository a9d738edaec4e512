package stdio

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// TestShutdownNoticeShape checks the notifications/cancelled a drain (or an
// early ending) writes before a listen's terminal message.
func TestShutdownNoticeShape(t *testing.T) {
	for i, id := range []jsonrpc.ID{jsonrpc.StringID("s-1"), jsonrpc.IntID(42), jsonrpc.StringID(`we"ird`)} {
		reason := []string{shutdownReason, endedReason(listen.ErrRevoked), endedReason(listen.ErrFellBehind)}[i]
		notice := serverCancelled(id, reason)
		require.True(t, json.Valid(notice), "%s", notice)
		var m struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage            `json:"requestId"`
				Reason    string                     `json:"reason"`
				Meta      map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(notice, &m))
		require.Equal(t, spec.MethodCancelled, m.Method)
		require.Equal(t, id.Raw(), string(m.Params.RequestID))
		require.Equal(t, id.Raw(), string(m.Params.Meta[spec.MetaSubscriptionID]))
		require.Equal(t, reason, m.Params.Reason)
	}
}

func TestLineReader(t *testing.T) {
	type got struct {
		line    string
		tooLong bool
	}
	cases := []struct {
		name  string
		in    string
		max   int
		want  []got
		final error
	}{
		{name: "empty", in: "", max: 8, final: io.EOF},
		{name: "lines", in: "a\nbb\n\nccc\n", max: 8, want: []got{{"a", false}, {"bb", false}, {"", false}, {"ccc", false}}, final: io.EOF},
		{name: "last line without newline", in: "a\nbb", max: 8, want: []got{{"a", false}, {"bb", false}}, final: io.EOF},
		{name: "crlf kept", in: "a\r\n", max: 8, want: []got{{"a\r", false}}, final: io.EOF},
		{name: "at the limit", in: "12345678\n", max: 8, want: []got{{"12345678", false}}, final: io.EOF},
		{name: "over the limit", in: "123456789\nok\n", max: 8, want: []got{{"", true}, {"ok", false}}, final: io.EOF},
		{name: "over, last", in: "ok\n123456789", max: 8, want: []got{{"ok", false}, {"", true}}, final: io.EOF},
		{name: "long lines", in: strings.Repeat("x", 200_000) + "\n" + strings.Repeat("y", 150_000) + "\nz\n", max: 150_000,
			want: []got{{"", true}, {strings.Repeat("y", 150_000), false}, {"z", false}}, final: io.EOF},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tc := range cases {
		for rname, mk := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				lr := newLineReader(mk(tc.in), tc.max)
				var lines []got
				for {
					line, tooLong, err := lr.next()
					if err != nil {
						require.ErrorIs(t, err, tc.final)
						break
					}
					lines = append(lines, got{string(line), tooLong})
				}
				require.Equal(t, tc.want, lines)
				_, _, err := lr.next()
				require.ErrorIs(t, err, tc.final, "the end is sticky")
			})
		}
	}
}

func TestLineReaderDropsPartialLineOnReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := newLineReader(io.MultiReader(strings.NewReader("ok\npart"), iotest.ErrReader(boom)), 64)
	line, tooLong, err := lr.next()
	require.NoError(t, err)
	require.False(t, tooLong)
	require.Equal(t, "ok", string(line))
	_, _, err = lr.next()
	require.ErrorIs(t, err, boom)
}

func TestResultResponse(t *testing.T) {
	b, err := resultResponse(jsonrpc.IntID(1), nil)
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(b))
	b, err = resultResponse(jsonrpc.StringID("a"), json.RawMessage(" [1, 2]\n"))
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","id":"a","result":[1, 2]}`, string(b))
	_, err = resultResponse(jsonrpc.IntID(1), json.RawMessage(`{`))
	require.ErrorIs(t, err, errResultNotJSON)
}
