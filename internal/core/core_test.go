package core_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSafeCall(t *testing.T) {
	ran := false
	assert.Nil(t, core.SafeCall(func() { ran = true }))
	assert.True(t, ran)
	p := core.SafeCall(func() { panic("boom") })
	if assert.NotNil(t, p) {
		assert.Equal(t, "boom", p.Value)
		assert.Contains(t, string(p.Stack), "core_test.TestSafeCall")
	}
}
