package echo_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/echo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCut(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tools/list", "tools/list"},
		{strings.Repeat("a", echo.Max), strings.Repeat("a", echo.Max)},
		{strings.Repeat("a", echo.Max+1), strings.Repeat("a", echo.Max) + "..."},
		{strings.Repeat("a", echo.Max-1) + "é", strings.Repeat("a", echo.Max-1) + "..."}, // not inside the é
	} {
		assert.Equal(t, tt.want, echo.Cut(tt.in))
	}
}
