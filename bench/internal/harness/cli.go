package harness

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// Main is the main function of a benchmark command named name: it calls
// run with the program's arguments, standard error as its log, and a
// context that ends on SIGINT or SIGTERM; if run fails it prints
// "name: error" to standard error and exits with status 1.
func Main(name string, run func(ctx context.Context, args []string, log io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// ParseArgs parses the arguments of a benchmark command with fs, refuses
// positional ones, and returns the names of the flags args set.
func ParseArgs(fs *flag.FlagSet, args []string) (map[string]bool, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, nil
}

// Dirs returns the repository root and the output directory of a benchmark
// command from its -repo and -out-dir flags: repo, or if it is empty the
// checkout above the working directory (FindRepoRoot); outDir, joined to
// that root if it is relative.
func Dirs(repo, outDir string) (root, out string, err error) {
	root = repo
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err
		}
		if root, err = FindRepoRoot(wd); err != nil {
			return "", "", err
		}
	}
	if filepath.IsAbs(outDir) {
		return root, outDir, nil
	}
	return root, filepath.Join(root, outDir), nil
}

// Logf returns the progress log of a benchmark command: each call writes
// one line to w, after the time of day (15:04:05).
func Logf(w io.Writer) func(format string, a ...any) {
	return func(format string, a ...any) {
		fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
}
