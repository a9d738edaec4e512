//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// measureRevoke measures, with -revoke, how long a revoked principal's
// stream stays open while another principal's Access.Check blocks. Each
// run serves, in this process over loopback, listens of a principal u0
// whose Check blocks for block (ignoring its context), of the victim u1,
// and of others more principals, with Access.Every at every. Once u0's
// Check is in flight, u1 is revoked and the time until its stream's
// ending reaches the client is taken, in two cases, each on a fresh
// server: "schedule" (the next scheduled rounds must end it) and
// "recheck" (Recheck(ctx, nil) is called at once, on a goroutine). A
// stream still open after limit counts as limit.
func measureRevoke(runs, others int, every, block, limit time.Duration) error {
	fmt.Printf("loadavg before: %s", loadavg())
	res := map[string][]float64{}
	for run := range runs {
		for _, mode := range []string{"schedule", "recheck"} {
			d, err := revokeOnce(mode, others, every, block, limit)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", run+1, mode, err)
			}
			fmt.Printf("run %d %-8s revoked stream ended after %v\n", run+1, mode, d.Round(100*time.Microsecond))
			res[mode] = append(res[mode], float64(d.Microseconds())/1000)
		}
	}
	fmt.Printf("loadavg after: %s", loadavg())
	fmt.Printf("\nrevoked stream's end while another principal's Check blocks %v; Every %v, %d other principals, %d runs: median [min-max] ms (limit %v)\n",
		block, every, others, runs, limit)
	for _, mode := range []string{"schedule", "recheck"} {
		fmt.Printf("  %-8s %s\n", mode, summary(res[mode], 1))
	}
	return nil
}

// revokeOnce is one run of one case: how long u1's stream stayed open
// after it was revoked.
func revokeOnce(mode string, others int, every, block, limit time.Duration) (time.Duration, error) {
	h, err := hub.New(hub.Options{})
	if err != nil {
		return 0, err
	}
	var (
		mu      sync.Mutex
		revoked = map[string]bool{}
		slowIn  = make(chan struct{}, 1)
		stop    = make(chan struct{}) // releases the blocked Check at the end
	)
	access := &listen.Access{
		Every: every,
		Check: func(_ context.Context, auth any) error {
			if auth == "u0" {
				select {
				case slowIn <- struct{}{}:
				default:
				}
				select {
				case <-time.After(block):
				case <-stop:
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if revoked[auth.(string)] {
				return listen.ErrRevoked
			}
			return nil
		},
	}
	sh, err := streamhttp.New(h, streamhttp.Options{
		Listen:       listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true}, Access: access},
		MaxStreams:   1 << 20,
		KeepAlive:    time.Hour,
		Authenticate: func(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil },
	})
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: sh, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { // ends with srv.Close below
		defer close(served)
		_ = srv.Serve(ln)
	}()
	var conns []net.Conn
	defer func() {
		close(stop)
		for _, c := range conns {
			c.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = sh.Shutdown(ctx)
		_ = srv.Close()
		<-served
		if c, ok := any(access).(interface{ Close() }); ok {
			c.Close() // the Access's rounds end with it
		}
	}()
	addr := ln.Addr().String()
	for i := range others + 2 {
		c, err := openOne(addr, i, i)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	victim := conns[1]
	select { // the first round reaches u0, whose Check blocks
	case <-slowIn:
	case <-time.After(every + limit):
		return 0, errors.New("u0 was not checked")
	}
	mu.Lock()
	revoked["u1"] = true
	mu.Unlock()
	start := time.Now()
	if mode == "recheck" {
		go access.Recheck(context.Background(), nil) // it may wait for u0's Check
	}
	_ = victim.SetReadDeadline(start.Add(limit))
	buf := make([]byte, 4096)
	n, err := victim.Read(buf) // the ending is the next thing on the stream
	took := time.Since(start)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return limit, nil
	case err != nil:
		return 0, err
	case !strings.Contains(string(buf[:n]), "revoked"):
		return 0, fmt.Errorf("not the revoked ending: %q", buf[:n])
	}
	return took, nil
}
