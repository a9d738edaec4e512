package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcplisten/listen/listentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var buf listentest.LogBuffer // safe for the program's goroutines
	out = &buf
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := run(ctx); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	count := func(s string) int { return strings.Count(got, s+"\n") }
	for _, c := range []string{"A", "B", "C"} {
		if n := count("client " + c + " <- notifications/tools/list_changed"); n != 1 {
			t.Errorf("client %s got the tools change %d times", c, n)
		}
		if n := count("client " + c + ": stream completed"); n != 1 {
			t.Errorf("client %s stream completed %d times", c, n)
		}
	}
	for c, want := range map[string]int{"A": 1, "B": 0, "C": 1} {
		if n := count("client " + c + " <- notifications/resources/updated " + configURI); n != want {
			t.Errorf("client %s got the resource update %d times, want %d", c, n, want)
		}
	}
	if !strings.HasSuffix(got, "nats: server stopped\n") {
		t.Errorf("output does not end with the server's stop:\n%s", got)
	}
	t.Log("\n" + got)
}
