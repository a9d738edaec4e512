package jsonrpc

import "encoding/json"

// envelope is the JSON-RPC request as first decoded.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Message is one decoded JSON-RPC message, before it is known to be a
// listen request. Transports use it to route messages.
type Message struct {
	// ID is the request id; invalid for notifications.
	ID ID
	// HasID reports whether the message had an "id" member at all.
	HasID  bool
	Method string
	Params json.RawMessage
}

// ParseMessage decodes one JSON-RPC request or notification. It returns a
// -32700 *Error for malformed JSON and a -32600 *Error for a message that is
// not a valid request or notification (the returned Message then still holds
// the id when it could be read, so the error can echo it).
func ParseMessage(data []byte) (Message, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		if _, isSyntax := err.(*json.SyntaxError); isSyntax || !json.Valid(data) {
			return Message{}, NewError(CodeParseError, "Parse error")
		}
		return Message{}, NewError(CodeInvalidRequest, "Invalid request: expected a JSON-RPC object")
	}
	var m Message
	if len(env.ID) > 0 {
		m.HasID = true
		id, ok := ParseID(env.ID)
		if !ok {
			return m, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
		}
		m.ID = id
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return m, NewError(CodeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`)
	}
	if env.Method == nil || *env.Method == "" {
		return m, NewError(CodeInvalidRequest, "Invalid request: method must be a non-empty string")
	}
	m.Method = *env.Method
	m.Params = env.Params
	return m, nil
}
