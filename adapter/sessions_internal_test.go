package adapter

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A ClientKey that returns "" leaves the client to the connection's
// address, as a nil ClientKey does; any other key is kept as given.
func TestSessionOptionsClientKey(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	for _, tt := range []struct {
		name string
		key  func(*http.Request) string
		want string
	}{
		{"empty key: the address", func(*http.Request) string { return "" }, "192.0.2.7"},
		{"a key of its own", func(*http.Request) string { return "user:ann" }, "user:ann"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			so := SessionOptions{ClientKey: tt.key}
			assert.Equal(t, tt.want, so.internal().ClientKey(r))
		})
	}
	assert.Nil(t, SessionOptions{}.internal().ClientKey, "nil: the sessions package's default, the address")
}
