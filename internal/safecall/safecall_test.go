package safecall_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/safecall"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Run returns nil for a callback that returns, and the panic's value for
// one that panics, panic(nil) included.
func TestRun(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		f     func()
		check func(t *testing.T, v any)
	}{
		{"returns", func() {}, func(t *testing.T, v any) { assert.Nil(t, v) }},
		{"panics", func() { panic(boom) }, func(t *testing.T, v any) { assert.Equal(t, boom, v) }},
		{"panics nil", func() { panic(nil) }, func(t *testing.T, v any) {
			var pe *runtime.PanicNilError
			assert.ErrorAs(t, v.(error), &pe)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			v := safecall.Run(func() { ran = true; tc.f() })
			assert.True(t, ran)
			tc.check(t, v)
		})
	}
}
