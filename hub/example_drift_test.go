package hub_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleMatchesCommand checks that Example (example_test.go) is the
// program of examples/hub with its package-level names prefixed by
// "example", ignoring comments: the runnable command and the checked
// Example cannot drift apart.
func TestExampleMatchesCommand(t *testing.T) {
	renames := map[string]string{
		"main": "Example", "client": "exampleClient", "serve": "exampleServe",
		"tasks": "exampleTasks", "tasksID": "exampleTasksID", "taskStatus": "exampleTaskStatus",
	}
	command := printWithoutComments(t, "../examples/hub/main.go", func(f *ast.File) {
		f.Name.Name = "hub_test"
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Obj != nil && f.Scope.Objects[id.Name] == id.Obj {
				if r, ok := renames[id.Name]; ok {
					id.Name = r
				}
			}
			return true
		})
	})
	example := printWithoutComments(t, "example_test.go", func(*ast.File) {})
	require.Equal(t, command, example)
}

func printWithoutComments(t *testing.T, path string, edit func(*ast.File)) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0) // comments are not parsed
	require.NoError(t, err)
	edit(f)
	var buf bytes.Buffer
	require.NoError(t, (&printer.Config{Mode: printer.RawFormat}).Fprint(&buf, token.NewFileSet(), f))
	return buf.String()
}
