package streamhttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/listentest"
)

// failsafe bounds every wait of a test: it never synchronises anything, it
// only turns a hang into a failure.
const failsafe = 30 * time.Second

// recv receives from ch or fails the test after failsafe.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failsafe):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// The tests drive their listens with a listentest.Source; the helpers below
// wait on it within failsafe.

// streamOf waits for the stream of the listen whose id has the string form
// id.
func streamOf(t testing.TB, src *listentest.Source, id string) *listentest.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	st := src.Stream(ctx, id)
	require.NotNil(t, st, "timed out waiting for the stream of listen %s", id)
	return st
}

// reasonOf waits for the first Close of st and returns its reason.
func reasonOf(t testing.TB, st *listentest.Stream) error {
	t.Helper()
	recv(t, st.Closed(), "the close of stream "+st.ID)
	return st.Reason()
}

// pulled waits for one more Next call on st.
func pulled(t testing.TB, st *listentest.Stream) {
	t.Helper()
	recv(t, st.Nexts(), "a Next call on stream "+st.ID)
}
