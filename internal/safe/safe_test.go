package safe_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/safe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCall(t *testing.T) {
	ran := false
	assert.Nil(t, safe.Call(func() { ran = true }))
	assert.True(t, ran)
	p := safe.Call(func() { panic("boom") })
	if assert.NotNil(t, p) {
		assert.Equal(t, "boom", p.Value)
		assert.Contains(t, string(p.Stack), "safe_test.TestCall")
	}
}
