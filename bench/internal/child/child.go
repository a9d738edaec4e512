// Package child starts the server process of a benchmark program that runs
// itself as its server (ampbench, recheckcost, trailingbytes): the program
// starts its own executable with a server flag, reads what the server
// prints on its standard output (its addresses, a ready line), and stops it
// by closing its standard input.
package child

import (
	"io"
	"os"
	"os/exec"
)

// Process is a started server process.
type Process struct {
	Cmd *exec.Cmd
	// In is the process's standard input, Out its standard output.
	In  io.WriteCloser
	Out io.ReadCloser
}

// Start starts exe with args, its standard error this process's, and
// returns it with pipes to its standard input and from its standard output.
// The caller waits for it (Cmd.Wait) once done.
func Start(exe string, args ...string) (*Process, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = in.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Process{Cmd: cmd, In: in, Out: out}, nil
}
