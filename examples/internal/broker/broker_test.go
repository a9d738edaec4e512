package broker

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/hub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The flags parse into keys: one from -broker-key, several (a rotation)
// from a file, blank lines ignored; contradictory or useless flags, and a
// broker of another kind, are refused before anything is dialled.
func TestFlags(t *testing.T) {
	key := strings.Repeat("k", 32)
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte(key+"\n\n"+strings.Repeat("o", 32)+"\n"), 0o600))
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)

	for _, c := range []struct {
		args    []string
		keys    int
		joinErr string
	}{
		{args: nil},
		{args: []string{"-broker-key", key}, keys: 1, joinErr: "need -broker"},
		{args: []string{"-broker", "nats://127.0.0.1:1", "-broker-key", key, "-broker-key-file", file}, joinErr: "not both"},
		{args: []string{"-broker", "http://127.0.0.1:1"}, joinErr: "scheme must be"},
		{args: []string{"-broker", "amqp://u:secret@127.0.0.1:1"}, joinErr: "amqp://u:xxxxx@"},
		{args: []string{"-broker", "nats://127.0.0.1:1", "-broker-key-file", empty}, joinErr: "holds no key"},
		{args: []string{"-broker", "redis://127.0.0.1:1", "-broker-key", "short"}, keys: 1, joinErr: "invalid options"},
		{args: []string{"-broker-key-file", file}, keys: 2, joinErr: "need -broker"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg := Flags(fs)
		require.NoError(t, fs.Parse(c.args))
		if keys, err := cfg.Keys(); err == nil {
			assert.Len(t, keys, c.keys, "%v", c.args)
		}
		leave, err := cfg.Join(h, logger, nil)
		if c.joinErr == "" {
			require.NoError(t, err)
			require.NoError(t, leave())
			continue
		}
		assert.ErrorContains(t, err, c.joinErr, "%v", c.args)
		assert.NotContains(t, err.Error(), "secret", "a password never shows")
	}
}
