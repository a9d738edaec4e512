package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Regressions: each test below failed before its bug was fixed (found by
// this harness): a drain cancelled the context of a Source.Open in progress
// on HTTP; a client gone during Source.Open was answered and reported as a
// 500; a panicking Options.CanRead leaked an HTTP slot and crashed a stdio
// server; AbsoluteURI accepted URIs net/url (and the schema's "uri" format)
// refuses.

// A drain that begins while Source.Open runs: the listen is acknowledged,
// then completed (streamhttp: "a listen still being opened is acknowledged,
// then completed"; stdio: "A listen whose Source.Open is still running is
// completed as soon as it opens"), also for a source whose Open honours its
// context, as Go code should. So a drain must not end Source.Open's
// context: only the client leaving does.
func TestDrainDuringAContextAwareOpen(t *testing.T) {
	for _, kind := range fixtureKinds() {
		if strings.HasSuffix(kind.name, "-eof") {
			continue
		}
		t.Run(strings.TrimSuffix(kind.name, "-cancel"), func(t *testing.T) {
			runCase(t, kind, func(t *testing.T, fx fixture) {
				id := `"opening"`
				g := fx.gate()
				fx.src().script(id, plan{openGate: g, openHonoursCtx: true})
				cs := fx.listen(t, id, toolsFilter)
				call := fx.src().enteredOpen(t, id)
				drained := fx.beginDrain(t)
				select {
				case <-call.ctx.Done():
					t.Errorf("the drain ended Source.Open's context (cause %v)", context.Cause(call.ctx))
				default:
				}
				g.release()
				m := cs.recv(t)
				requireAck(t, m, id)
				wantStatus(t, cs, http.StatusOK)
				m = cs.recv(t)
				if m.method() == spec.MethodCancelled { // stdio sends it first
					m = cs.recv(t)
				}
				requireCompletion(t, m, id)
				cs.end(t)
				assert.ErrorIs(t, wantClass(t, fx.src().stream(t, id), "shutdown"), listen.ErrShutdown)
				drained()
				fx.probeRefused(t)
				fx.teardown(t)
				wantTerminal(t, fx, id, "complete")
			})
		})
	}
}

// A client that leaves while Source.Open runs cancels its listen: nothing
// is written for it (there is nobody to read it) and it is not reported as
// a server error. stdio already behaves so (TestFaultClientGoneAtEveryStep);
// this checks HTTP, where OnError is the server's error signal.
func TestHTTPClientGoneDuringOpenIsNotAnError(t *testing.T) {
	for _, kind := range fixtureKinds() {
		if !strings.HasPrefix(kind.name, "http") {
			continue
		}
		t.Run(kind.name, func(t *testing.T) {
			runCase(t, kind, func(t *testing.T, f fixture) {
				fx := f.(*httpFixture)
				id := `"leaving"`
				fx.src().script(id, plan{openGate: fx.gate(), openHonoursCtx: true})
				cs := fx.listen(t, id, toolsFilter)
				call := fx.src().enteredOpen(t, id)
				fx.abort(t, cs)
				await(t, call.ctx.Done(), "the end of Source.Open's context")
				fx.probe(t)
				fx.teardown(t)
				for _, r := range fx.reportedErrors() {
					assert.NotEqual(t, id, r.id, "OnRefuse(%v) for a client that left", r.err)
				}
				wantTerminal(t, fx, id, "none")
				assert.Empty(t, fx.transcript(t, id), "written for a client that left")
			})
		})
	}
}

// A panicking Options.CanRead (application code, like the Source) is
// contained like a panicking Source.Open: the listen gets an internal error
// (-32603) and the source is not opened; the server keeps serving, and
// drains and shuts down as usual (nothing is left holding it). The stdio
// cases run in a child process: without the fix the panic kills it.
func TestCanReadPanics(t *testing.T) {
	child := os.Getenv("RELIABILITY_CHILD")
	for _, kind := range fixtureKinds() {
		if strings.HasSuffix(kind.name, "-eof") {
			continue
		}
		name := strings.TrimSuffix(kind.name, "-cancel")
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(name, "stdio") && child != t.Name() {
				// In a child process of its own.
				cmd := exec.Command(os.Args[0], "-test.run=^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), "RELIABILITY_CHILD="+t.Name())
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "the child process:\n%s", out)
				return
			}
			runCase(t, kind, func(t *testing.T, fx fixture) {
				id := `"reader"`
				fx.src().script(id, plan{canReadPanics: true})
				cs := fx.listen(t, id, `{"resourceSubscriptions":["file:///a"]}`)
				m := cs.recv(t)
				if e := m.wireErr(); assert.NotNil(t, e, "%s", m) {
					assert.Equal(t, id, m.id())
					assert.Equal(t, jsonrpc.CodeInternalError, e.Code)
				}
				wantStatus(t, cs, http.StatusInternalServerError)
				cs.end(t)
				assert.Zero(t, fx.src().opens.Load(), "the source was opened")
				fx.probe(t)
				fx.shutdown(t) // returns: no slot or listen is left behind
				fx.probeRefused(t)
				fx.teardown(t)
				wantTerminal(t, fx, id, "error")
			})
		})
	}
}

// A resource URI is kept exactly or refused, on every transport: a JSON
// string with a lone surrogate escape ("\ud800") or invalid UTF-8 decodes
// to U+FFFD, so it would merge with every other such URI and with
// "\ufffd" itself; it is refused with -32602 MsgURIsUnicode and the source
// is not opened. A URI that spells U+FFFD, or a surrogate pair, is kept as
// it decodes.
func TestURIsWithLoneSurrogatesAreRefused(t *testing.T) {
	refused := []string{`"file:///\ud800"`, `"file:///\udfff"`, `"file:///a\ud83d"`, "\"file:///\xff\""}
	kept := map[string]string{`"file:///\ufffd"`: "file:///\uFFFD", `"file:///\ud83d\ude00"`: "file:///\U0001F600"}
	for _, kind := range fixtureKinds() {
		if strings.HasSuffix(kind.name, "-eof") {
			continue
		}
		t.Run(strings.TrimSuffix(kind.name, "-cancel"), func(t *testing.T) {
			runCase(t, kind, func(t *testing.T, fx fixture) {
				for i, u := range refused {
					id := fmt.Sprintf(`"lone-%d"`, i)
					cs := fx.listen(t, id, `{"resourceSubscriptions":["file:///ok",`+u+`]}`)
					requireError(t, cs.recv(t), id, jsonrpc.CodeInvalidParams, core.URIsUnicode)
					wantStatus(t, cs, http.StatusBadRequest)
					cs.end(t)
				}
				assert.Zero(t, fx.src().opens.Load())
				i := 0
				for u, want := range kept {
					id := fmt.Sprintf(`"kept-%d"`, i)
					i++
					cs := fx.listen(t, id, `{"resourceSubscriptions":[`+u+`]}`)
					ack := cs.recv(t)
					require.Equal(t, spec.MethodAcknowledged, ack.method(), "%s", ack)
					assert.Equal(t, []any{want}, ack.accepted()["resourceSubscriptions"], u)
					fx.abort(t, cs)
				}
				fx.probe(t)
			})
		})
	}
}

// A listen naming a resource URI that is not an RFC 3986 URI is refused
// with -32602 on every transport; AbsoluteURI and net/url agree on it.
func TestURIsNetURLRefusesAreRefused(t *testing.T) {
	uris := []string{"a://×@host/p", "a://usér@host", "A://�@", "http://[0]/x", "http://[1.2.3.4]/", "http://[::1::2]/", "http://[:]/"}
	for _, u := range uris {
		_, err := url.Parse(u)
		require.Error(t, err, "net/url accepts %q", u)
	}
	for _, kind := range fixtureKinds() {
		if strings.HasSuffix(kind.name, "-eof") {
			continue
		}
		t.Run(strings.TrimSuffix(kind.name, "-cancel"), func(t *testing.T) {
			runCase(t, kind, func(t *testing.T, fx fixture) {
				for i, u := range uris {
					assert.Error(t, listen.ResourceUpdated(u).Validate(), "an update of %q is valid", u)
					id := fmt.Sprintf(`"uri-%d"`, i)
					filter, err := json.Marshal(map[string]any{spec.KeyResourceSubscriptions: []string{u}})
					require.NoError(t, err)
					cs := fx.listen(t, id, string(filter))
					m := cs.recv(t)
					requireError(t, m, id, jsonrpc.CodeInvalidParams, core.URIsAbsolute)
					wantStatus(t, cs, http.StatusBadRequest)
					cs.end(t)
				}
				assert.Zero(t, fx.src().opens.Load())
				fx.probe(t)
			})
		})
	}
}
