package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// maxProbeBody bounds the body requireSampling reads (the endpoint's own
// default limit, 512 KiB).
const maxProbeBody = 512 << 10

// requireSampling answers a tools/call of test_missing_capability from a
// client that did not declare sampling with the MissingRequiredClientCapabilityError
// (-32021, data.requiredCapabilities {"sampling": {}}, HTTP 400) the
// specification asks for; it passes every other request to next unchanged,
// and those check refuses too (the endpoint's Origin and Host rules).
// mcp-go cannot answer a tool call so: it answers every error a tool
// handler returns with -32603 and no data. This concerns one diagnostic
// tool of the conformance suite, nothing of listen.
func requireSampling(next http.Handler, check func(*http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != "tools/call" || r.Body == nil || check(r) != nil {
			next.ServeHTTP(w, r)
			return
		}
		// Read as the endpoint's front reads: bounded in bytes and in time
		// (its default read timeout, 10 s).
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(10 * time.Second))
		body, err := io.ReadAll(io.LimitReader(r.Body, maxProbeBody+1))
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		var call struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					Caps map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err != nil || json.Unmarshal(body, &call) != nil || call.Params.Name != missingCapabilityTool || call.Params.Meta.Caps["sampling"] != nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"jsonrpc": "2.0", "id": call.ID,
			"error": map[string]any{
				"code":    -32021,
				"message": "sampling capability required but not declared by client",
				"data":    map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}},
			},
		})
	})
}
