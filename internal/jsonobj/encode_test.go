package jsonobj_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/jsonobj"
)

// stdString is s as encoding/json encodes it (without the HTML escapes).
func stdString(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(s))
	return strings.TrimSuffix(buf.String(), "\n")
}

// AppendString writes a JSON string that reads back as encoding/json's
// encoding of s does: escapes, control characters, U+2028/U+2029, invalid
// UTF-8 (each bad byte U+FFFD), long plain runs around them.
func TestAppendStringIsEncodingJSON(t *testing.T) {
	long := strings.Repeat("abcdefgh", 5)
	for _, s := range []string{
		"", "a", "file:///" + long, long + "\"" + long, long + `\` + long, "tab\there\nnl\r\x00\x1f\x7f",
		"é ü 😀", "\u2028\u2029", "bad \xff utf-8 \xc3\x28", long + "\xe2\x80", "<&>", long[:7] + "\"", long[:9] + "\n",
	} {
		got := jsonobj.AppendString([]byte("x"), s)
		require.Equal(t, byte('x'), got[0])
		var a, b string
		require.NoError(t, json.Unmarshal(got[1:], &a), "%q", got)
		require.NoError(t, json.Unmarshal([]byte(stdString(t, s)), &b))
		assert.Equal(t, b, a, "%q", s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"file:///a", "a\"b\\c\n", "\xff\u2028é", strings.Repeat("x", 20) + "\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsonobj.AppendString(nil, s)
		var a, b string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("AppendString(%q) = %q: not a JSON string: %v", s, got, err)
		}
		require.NoError(t, json.Unmarshal([]byte(stdString(t, s)), &b))
		if a != b {
			t.Fatalf("AppendString(%q) reads %q, encoding/json's %q", s, a, b)
		}
	})
}
