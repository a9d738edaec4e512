//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
)

// maxBody bounds a request body (the stalled-client scenario's listen
// carries a 64 KiB URI).
const maxBody = 4 << 20

// readmeURI is what trigger_resource_update updates without a uri, as the
// shared fixture of the other two servers does.
const readmeURI = "test://static/readme"

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// request is the part of a JSON-RPC request the floor reads.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string `json:"name"`
		Arguments struct {
			URI string `json:"uri"`
		} `json:"arguments"`
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	} `json:"params"`
}

// rpcError is a JSON-RPC error to answer with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// parseRequest decodes body into a request with a valid id (compacted), or
// says what is wrong with it.
func parseRequest(body []byte) (*request, *rpcError) {
	var r request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &rpcError{codeParse, "Parse error"}
	}
	if r.JSONRPC != "2.0" || r.Method == "" {
		return nil, &rpcError{codeInvalidRequest, "Invalid Request"}
	}
	var id bytes.Buffer
	if len(r.ID) == 0 || json.Compact(&id, r.ID) != nil || !validID(id.Bytes()) {
		return nil, &rpcError{codeInvalidRequest, "Invalid Request: id must be a string or a number"}
	}
	r.ID = id.Bytes()
	return &r, nil
}

// validID reports whether id (compact JSON) is a string or a number.
func validID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// The notifications, encoded once: a stream's frame is prefix, its id, suffix.
var (
	toolsPrefix = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`)
	toolsSuffix = []byte("}}}\n\n")
	toolsNote   = &note{tools: true, prefix: toolsPrefix, suffix: toolsSuffix}

	resourcePrefix = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`)
)

// resourceNote is the resources/updated notification for uri.
func resourceNote(uri string) *note {
	u, _ := json.Marshal(uri)
	return &note{uri: uri, prefix: resourcePrefix, suffix: append(append([]byte(`},"uri":`), u...), "}}\n\n"...)}
}

// listenHeader is the raw response header of a listen stream: the body is
// the SSE stream, until the server closes the connection.
const listenHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"

// ackFrame is the acknowledgement SSE event: the accepted filter is what
// the floor serves of the requested one.
func ackFrame(id []byte, tools bool, uris []string) []byte {
	b := []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`)
	b = append(b, id...)
	b = append(b, `},"notifications":{`...)
	if len(uris) > 0 {
		u, _ := json.Marshal(uris)
		b = append(append(append(b, `"resourceSubscriptions":`...), u...), ',')
	}
	if tools {
		b = append(b, `"toolsListChanged":true,`...)
	}
	if b[len(b)-1] == ',' {
		b = b[:len(b)-1]
	}
	return append(b, "}}}\n\n"...)
}

// handler serves POST /mcp.
type handler struct {
	e *engine
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, nil, &rpcError{codeInvalidRequest, "Invalid Request: " + err.Error()})
		return
	}
	req, rerr := parseRequest(body)
	if rerr != nil {
		writeError(w, http.StatusBadRequest, nil, rerr)
		return
	}
	switch req.Method {
	case "subscriptions/listen":
		h.listen(w, req)
	case "tools/call":
		h.call(w, req)
	default:
		writeError(w, http.StatusOK, req.ID, &rpcError{codeMethodNotFound, "Method not found"})
	}
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
	return buf.Bytes(), err
}

// call serves the two trigger tools: the notification is handed to the
// writer loops and the call returns without waiting for the fan-out.
func (h *handler) call(w http.ResponseWriter, req *request) {
	var text string
	switch req.Params.Name {
	case "test_trigger_tool_change":
		h.e.publish(toolsNote)
		text = "tools list changed"
	case "trigger_resource_update":
		uri := req.Params.Arguments.URI
		if uri == "" {
			uri = readmeURI
		}
		h.e.publish(resourceNote(uri))
		text = "updated " + uri
	default:
		writeError(w, http.StatusOK, req.ID, &rpcError{codeInvalidParams, "unknown tool " + fmt.Sprintf("%q", req.Params.Name)})
		return
	}
	t, _ := json.Marshal(text)
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(req.ID)
	b.WriteString(`,"result":{"content":[{"type":"text","text":`)
	b.Write(t)
	b.WriteString(`}]}}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}

// listen acknowledges a listen request on the raw connection and hands the
// socket to the engine.
func (h *handler) listen(w http.ResponseWriter, req *request) {
	f := req.Params.Notifications
	if !f.ToolsListChanged && len(f.ResourceSubscriptions) == 0 {
		writeError(w, http.StatusOK, req.ID, &rpcError{codeInvalidParams, "nothing to listen to: the floor serves toolsListChanged and resourceSubscriptions"})
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusOK, req.ID, &rpcError{codeInvalidRequest, "listen needs HTTP/1.x"})
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	fd, err := takeOver(conn)
	if err != nil {
		return // the client is gone
	}
	// The loop writes the header and the acknowledgement first.
	first := append([]byte(listenHeader), ackFrame(req.ID, f.ToolsListChanged, f.ResourceSubscriptions)...)
	h.e.add(fd, req.ID, f.ToolsListChanged, f.ResourceSubscriptions, first)
}

// takeOver returns a non-blocking duplicate of conn's descriptor and closes
// conn (the duplicate keeps the socket open).
func takeOver(conn net.Conn) (int, error) {
	defer conn.Close()
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// writeError answers with a JSON-RPC error (id null when unknown).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, e *rpcError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
