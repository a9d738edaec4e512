// Package rawh2 writes the few HTTP/2 frames the repository's tests and
// measurement programs send by hand, to do what no HTTP/2 client does on
// purpose: open listen streams and reset them at once (a rapid reset). The
// root module depends on nothing but the standard library, so it has no
// golang.org/x/net/http2 to do it with.
package rawh2

import (
	"encoding/binary"
	"strconv"
)

// Preface is the client connection preface followed by an empty SETTINGS
// frame: what a client sends first (RFC 9113 section 3.4).
func Preface() []byte {
	return Frame([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), typeSettings, 0, 0, nil)
}

// Frame types and flags used here (RFC 9113 section 6).
const (
	typeData     = 0
	typeHeaders  = 1
	typeRST      = 3
	typeSettings = 4

	flagEndStream  = 1
	flagEndHeaders = 4

	codeCancel = 8
)

// Frame appends a frame of type typ with flags on stream to b (RFC 9113
// section 4.1).
func Frame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	b = append(b, byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload)), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}

// Literal appends a header field as a literal without indexing, with a new
// name and no Huffman coding (RFC 7541 section 6.2.2).
func Literal(b []byte, name, value string) []byte {
	b = append(b, 0)
	for _, s := range []string{name, value} {
		b = appendInt(b, len(s))
		b = append(b, s...)
	}
	return b
}

// appendInt appends n as an integer with a 7-bit prefix, the H bit clear
// (RFC 7541 section 5.1).
func appendInt(b []byte, n int) []byte {
	if n < 127 {
		return append(b, byte(n))
	}
	b = append(b, 127)
	for n -= 127; n >= 128; n >>= 7 {
		b = append(b, byte(n&127|128))
	}
	return append(b, byte(n))
}

// ResetListen appends what a client sends to post a listen request body on
// stream and reset the stream right after it: HEADERS (a conforming listen
// POST to path), the body in one DATA frame that ends the stream, and
// RST_STREAM with CANCEL.
func ResetListen(b []byte, scheme, authority, path string, stream uint32, body string) []byte {
	var hdr []byte
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", scheme}, {":path", path}, {":authority", authority},
		{"content-type", "application/json"}, {"accept", "application/json, text/event-stream"},
		{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "subscriptions/listen"},
		{"content-length", strconv.Itoa(len(body))},
	} {
		hdr = Literal(hdr, f[0], f[1])
	}
	b = Frame(b, typeHeaders, flagEndHeaders, stream, hdr)
	b = Frame(b, typeData, flagEndStream, stream, []byte(body))
	return Frame(b, typeRST, 0, stream, binary.BigEndian.AppendUint32(nil, codeCancel))
}
