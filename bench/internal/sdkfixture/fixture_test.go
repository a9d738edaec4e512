package sdkfixture

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSameAsExamplesFixture checks that this package is still the same code
// as examples/internal/fixture (which our benchmarked server is built from):
// every file of either package, below its package clause, is the same in
// both. The go-sdk baseline and our server then offer the same tools and
// capabilities.
func TestSameAsExamplesFixture(t *testing.T) {
	theirs := filepath.Join("..", "..", "..", "examples", "internal", "fixture")
	for _, name := range []string{"fixture.go", "clientcheck.go"} {
		mine, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(filepath.Join(theirs, name))
		if err != nil {
			t.Fatalf("the examples fixture moved or was renamed: %v", err)
		}
		a, b := body(t, mine, "package sdkfixture\n"), body(t, orig, "package fixture\n")
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from examples/internal/fixture/%s: copy the change over (the go-sdk baseline and examples/server must serve the same fixture)", name, name)
		}
	}
}

// body is src after its package clause.
func body(t *testing.T, src []byte, clause string) []byte {
	t.Helper()
	i := bytes.Index(src, []byte(clause))
	if i < 0 {
		t.Fatalf("no %q", clause)
	}
	return src[i+len(clause):]
}
