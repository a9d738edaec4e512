package rawh2_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/rawh2"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// frame is one frame read back.
type frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

func readFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 9)
		n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		require.GreaterOrEqual(t, len(b), 9+n)
		out = append(out, frame{b[3], b[4], binary.BigEndian.Uint32(b[5:9]) &^ (1 << 31), b[9 : 9+n]})
		b = b[9+n:]
	}
	return out
}

func TestResetListen(t *testing.T) {
	body := string(bytes.Repeat([]byte("x"), 300)) // a content-length of 3 digits; a long value below
	b := rawh2.ResetListen(nil, "http", "127.0.0.1:1", "/mcp", 7, body)
	fs := readFrames(t, b)
	require.Len(t, fs, 3)
	assert.Equal(t, frame{1, 4, 7, fs[0].payload}, fs[0], "HEADERS, END_HEADERS")
	assert.Equal(t, frame{0, 1, 7, []byte(body)}, fs[1], "DATA, END_STREAM")
	assert.Equal(t, frame{3, 0, 7, []byte{0, 0, 0, 8}}, fs[2], "RST_STREAM CANCEL")
	assert.True(t, bytes.HasPrefix(fs[0].payload, []byte("\x00\x07:method\x04POST")), "literal without indexing")
	assert.Contains(t, string(fs[0].payload), "\x0econtent-length\x03300")

	long := rawh2.Literal(nil, "n", string(bytes.Repeat([]byte("v"), 200)))
	assert.Equal(t, []byte{0, 1, 'n', 127, 200 - 127}, long[:5], "a 200-byte value: 127 then 73")
	longer := rawh2.Literal(nil, "n", string(bytes.Repeat([]byte("v"), 1337)))
	assert.Equal(t, []byte{0, 1, 'n', 127, 58 | 128, 9}, longer[:6], "1337 = 127 + 58 + 9×128 (RFC 7541 section 5.1)")
}

func TestPreface(t *testing.T) {
	p := rawh2.Preface()
	require.True(t, bytes.HasPrefix(p, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")))
	assert.Equal(t, []frame{{4, 0, 0, []byte{}}}, readFrames(t, p[24:]))
}
