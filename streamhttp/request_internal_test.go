package streamhttp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readBlocks returns exactly what io.ReadAll returns, whatever the size, the
// announced length (right, wrong or unknown) and the reads' sizes, and the
// reader's error.
func TestReadBlocks(t *testing.T) {
	for _, size := range []int{0, 1, 511, 512, 513, firstBlockMax - 1, firstBlockMax, firstBlockMax + 1,
		firstBlockMax + blockSize, 5*blockSize + 7, 256 << 10} {
		body := strings.Repeat("0123456789abcdef", size/16+1)[:size]
		for _, length := range []int64{-1, int64(size), int64(size) + 100, int64(size) / 2} {
			for _, half := range []bool{false, true} {
				var rd io.Reader = strings.NewReader(body)
				if half {
					rd = iotest.HalfReader(rd)
				}
				got, err := readBlocks(rd, length)
				require.NoError(t, err)
				require.Equal(t, body, string(got), "size %d, length %d", size, length)
				if size > firstBlockMax {
					assert.Equal(t, len(got), cap(got), "joined blocks: exactly the body (size %d, length %d)", size, length)
				}
			}
		}
	}
	boom := errors.New("boom")
	_, err := readBlocks(io.MultiReader(bytes.NewReader(make([]byte, 40<<10)), iotest.ErrReader(boom)), -1)
	assert.ErrorIs(t, err, boom)
}
