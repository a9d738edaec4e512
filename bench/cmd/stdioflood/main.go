// Command stdioflood measures a stdio server process under a request flood
// from a client that never reads the server's standard output.
//
// It starts itself as the server (a stdio.Server on its inherited, blocking
// standard input and output pipes, answering every request at once), writes
// -n tools/list requests to the server's stdin as fast as the server takes
// them, never reads its stdout, and samples the server's RSS (VmRSS, VmHWM
// from /proc) every 100 ms. The server reports its heap and goroutines, and
// when Serve returned with what error. Linux only. From the repository root:
//
//	go run ./bench/cmd/stdioflood [-n 200000] [-write-timeout 5s] [-watch 15s] [-runs 5]
//
// With the default write timeout Serve ends after it; -write-timeout 1m
// keeps the flood going for the whole watch to show where memory settles.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/bench/internal/procstat"

	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

func main() {
	server := flag.Bool("server", false, "run as the server (internal)")
	n := flag.Int("n", 200_000, "requests the client sends")
	wt := flag.Duration("write-timeout", stdio.DefaultWriteTimeout, "the server's Options.WriteTimeout")
	maxInFlight := flag.Int("max-in-flight", 0, "the server's Options.MaxInFlight (0: the default)")
	blockingFiles := flag.Bool("blocking-files", false, "the server's Options.BlockingFiles")
	watch := flag.Duration("watch", 15*time.Second, "how long to watch the server")
	runs := flag.Int("runs", 1, "runs (the summary gives the median, min and max)")
	quiet := flag.Bool("q", false, "print the summary only")
	flag.Parse()
	if *server {
		serve(*wt, *maxInFlight, *blockingFiles)
		return
	}
	var peaks, settled []float64
	for i := range *runs {
		r := run(*n, *wt, *maxInFlight, *blockingFiles, *watch, *quiet)
		fmt.Printf("run %d: peak RSS %.1f MiB, RSS at the end %.1f MiB, requests taken by the server %d of %d, %s\n",
			i+1, procstat.MiB(r.peak), procstat.MiB(r.last), r.taken, *n, r.end)
		peaks = append(peaks, procstat.MiB(r.peak))
		settled = append(settled, procstat.MiB(r.last))
	}
	if *runs > 1 {
		fmt.Printf("peak RSS over %d runs: median %.1f MiB (min %.1f, max %.1f); RSS at the end: median %.1f MiB (min %.1f, max %.1f)\n",
			*runs, procstat.Median(peaks), slices.Min(peaks), slices.Max(peaks), procstat.Median(settled), slices.Min(settled), slices.Max(settled))
	}
}

type result struct {
	peak, last int64
	taken      int64
	end        string
}

func run(n int, wt time.Duration, maxInFlight int, blockingFiles bool, watch time.Duration, quiet bool) result {
	args := []string{"-server", "-write-timeout", wt.String(), "-max-in-flight", strconv.Itoa(maxInFlight)}
	if blockingFiles {
		args = append(args, "-blocking-files")
	}
	cmd := exec.Command(os.Args[0], args...)
	in, err := cmd.StdinPipe()
	check(err)
	out, err := cmd.StdoutPipe() // never read
	check(err)
	defer out.Close()
	if !quiet {
		cmd.Stderr = os.Stderr
	}
	check(cmd.Start())

	// The client: one Write per request, so that the count is what the
	// server's reader took (give or take the pipe's 64 KiB buffer).
	var taken atomic.Int64
	// Ends after n requests, or at the first failed write: both returns
	// below close in.
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`+"\n", i+1); err != nil {
				return
			}
			taken.Add(1)
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // both returns below receive from exited

	var r result
	t0 := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastPrint := time.Duration(0)
	for {
		select {
		case err := <-exited:
			r.taken = taken.Load()
			r.end = fmt.Sprintf("the server exited after %.1fs (%v)", time.Since(t0).Seconds(), err)
			in.Close()
			return r
		case <-tick.C:
			rss, hwm, _ := procstat.Memory(cmd.Process.Pid) // zero once the server exited
			r.peak = max(r.peak, hwm)
			if rss > 0 {
				r.last = rss
			}
			el := time.Since(t0)
			if !quiet && el-lastPrint >= time.Second {
				lastPrint = el
				fmt.Printf("t=%4.1fs RSS %7.1f MiB (peak %7.1f MiB), requests taken %d\n", el.Seconds(), procstat.MiB(rss), procstat.MiB(hwm), taken.Load())
			}
			if el > watch {
				r.taken = taken.Load()
				r.end = fmt.Sprintf("the server was still running after %v", watch)
				in.Close()
				_ = cmd.Process.Kill()
				<-exited
				return r
			}
		}
	}
}

// serve is the server process: a stdio.Server on stdin and stdout whose
// handler answers at once.
func serve(wt time.Duration, maxInFlight int, blockingFiles bool) {
	h, err := hub.New(hub.Options{})
	check(err)
	app := stdio.HandlerFunc(func(context.Context, jsonrpc.Message) (json.RawMessage, error) {
		return json.RawMessage(`{"tools":[]}`), nil
	})
	ls, err := listen.NewServer(h, listen.Options{})
	check(err)
	srv, err := stdio.New(ls, stdio.Options{Handler: app, WriteTimeout: wt, MaxInFlight: maxInFlight, BlockingFiles: blockingFiles})
	check(err)
	go func() { // for the life of the server process
		var ms runtime.MemStats
		for range time.Tick(time.Second) {
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(os.Stderr, "server: goroutines %d, heap in use %.1f MiB, from the OS %.1f MiB\n",
				runtime.NumGoroutine(), float64(ms.HeapInuse)/(1<<20), float64(ms.Sys)/(1<<20))
		}
	}()
	t0 := time.Now()
	err = srv.Serve(context.Background(), os.Stdin, os.Stdout)
	fmt.Fprintf(os.Stderr, "server: Serve returned after %.1fs: %v\n", time.Since(t0).Seconds(), err)
	os.Exit(0)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}
