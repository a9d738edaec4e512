package harness

import (
	"bytes"
	"flag"
	"path/filepath"
	"regexp"
	"testing"
)

// ParseArgs reports the flags set and refuses positional arguments.
func TestParseArgs(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		fs.Int("n", 1, "")
		fs.Bool("quick", false, "")
		return fs
	}
	set, err := ParseArgs(newFS(), []string{"-n", "1"})
	if err != nil || !set["n"] || set["quick"] {
		t.Errorf("ParseArgs(-n 1) = %v, %v", set, err)
	}
	if _, err := ParseArgs(newFS(), []string{"-quick", "extra"}); err == nil {
		t.Error("a positional argument was accepted")
	}
	if _, err := ParseArgs(newFS(), []string{"-bogus"}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

// Dirs keeps an absolute -out-dir, joins a relative one to the root, and
// finds the root from the working directory when -repo is empty.
func TestDirs(t *testing.T) {
	abs := t.TempDir()
	root, out, err := Dirs("/repo", abs)
	if err != nil || root != "/repo" || out != abs {
		t.Errorf("Dirs(/repo, %s) = %s, %s, %v", abs, root, out, err)
	}
	if _, out, _ := Dirs("/repo", "bench/results"); out != filepath.Join("/repo", "bench/results") {
		t.Errorf("relative out-dir: %s", out)
	}
	root, out, err = Dirs("", "r")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := FindRepoRoot("."); root != want || out != filepath.Join(want, "r") {
		t.Errorf("Dirs(\"\", r) = %s, %s; want the root %s", root, out, want)
	}
}

// Logf writes one line a call, after the time of day.
func TestLogf(t *testing.T) {
	var b bytes.Buffer
	Logf(&b)("run %d of %s", 2, "x")
	if !regexp.MustCompile(`^\d\d:\d\d:\d\d run 2 of x\n$`).MatchString(b.String()) {
		t.Errorf("logged %q", b.String())
	}
}
