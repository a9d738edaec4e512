package listentest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// SSEEvent is one server-sent event, or one comment (a keep-alive).
type SSEEvent struct {
	// Event is the "event" field ("message" for every listen message).
	Event string
	// Data is the "data" field; several data lines are joined with "\n".
	Data string
	// ID is the "id" field, if any.
	ID string
	// Retry is the "retry" field as sent (the reconnection delay the
	// server asks for, in milliseconds), if any.
	Retry string
	// Comment is the text of a comment line (":" and one space stripped);
	// IsComment tells a comment from an event with empty fields.
	Comment   string
	IsComment bool
}

// SSEReader reads the server-sent events of a response body, such as the
// body of a listen served by the streamhttp package.
type SSEReader struct {
	rd *bufio.Reader
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader { return &SSEReader{rd: bufio.NewReader(r)} }

// Next returns the next event or comment. At a clean end of the body it
// returns io.EOF; a body cut inside an event is io.ErrUnexpectedEOF.
func (r *SSEReader) Next() (SSEEvent, error) {
	var ev SSEEvent
	var data []string
	seen := false
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && !seen {
				return ev, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "":
			if seen {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			if !seen {
				return SSEEvent{Comment: strings.TrimPrefix(line[1:], " "), IsComment: true}, r.skipBlank()
			}
		default:
			seen = true
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "event":
				ev.Event = value
			case "data":
				data = append(data, value)
			case "id":
				ev.ID = value
			case "retry":
				ev.Retry = value
			default:
				return ev, fmt.Errorf("listentest: unexpected SSE field %q", name)
			}
		}
	}
}

// skipBlank consumes the blank line that ends a comment block, if it is
// there.
func (r *SSEReader) skipBlank() error {
	b, err := r.rd.Peek(1)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if b[0] == '\n' {
		_, _ = r.rd.ReadByte()
	} else if b[0] == '\r' {
		_, _ = r.rd.ReadString('\n')
	}
	return nil
}

// Data returns the data of the next "message" event, skipping comments: one
// JSON-RPC message as the server sent it (for a listen), which the caller
// owns. It fails on an event of another type, and with Next's errors
// (io.EOF at a clean end of the body).
func (r *SSEReader) Data() (json.RawMessage, error) {
	for {
		ev, err := r.Next()
		if err != nil {
			return nil, err
		}
		if ev.IsComment {
			continue
		}
		if ev.Event != "message" {
			return nil, fmt.Errorf("listentest: SSE event %q, want message", ev.Event)
		}
		return json.RawMessage(ev.Data), nil
	}
}

// Message returns the next JSON-RPC message, skipping comments: the Data of
// the next "message" event, decoded with json.Number numbers.
func (r *SSEReader) Message() (map[string]any, error) {
	data, err := r.Data()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("listentest: SSE data %q: %w", data, err)
	}
	return m, nil
}

// ReadMessages reads the whole answer to a Streamable HTTP POST: the one
// JSON-RPC message of an application/json body, or the data of every
// message event of a text/event-stream body, in order (a listen's, once it
// ended). It reads resp.Body to its end; the caller closes it. Any other
// Content-Type is an error.
func ReadMessages(resp *http.Response) ([]json.RawMessage, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return []json.RawMessage{bytes.TrimSpace(b)}, nil
	case "text/event-stream":
		var out []json.RawMessage
		r := NewSSEReader(resp.Body)
		for {
			d, err := r.Data()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, d)
		}
	}
	return nil, fmt.Errorf("listentest: Content-Type %q, want application/json or text/event-stream", resp.Header.Get("Content-Type"))
}
