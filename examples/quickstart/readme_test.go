package main

import (
	"os"
	"strings"
	"testing"
)

// The README's quick start is this program, verbatim.
func TestReadmeQuickStartIsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(prog)+"```") {
		t.Fatal("README.md's quick start differs from examples/quickstart/main.go")
	}
}
