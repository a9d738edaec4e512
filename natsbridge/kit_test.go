package natsbridge_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
)

// logBuffer collects what a logger writes, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a logger writing text records of level and above to l.
func (l *logBuffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}

// proxy is a loopback TCP proxy in front of the broker: Cut closes its
// listener and every connection through it, which partitions the clients
// that dial it (and only them); Restore listens again on the same address.
// Its goroutines end at Cut and, at the latest, with the test.
type proxy struct {
	t        testing.TB
	addr     string
	upstream string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, upstream string) *proxy {
	t.Helper()
	p := &proxy{t: t, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.listen("127.0.0.1:0")
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's address (host:port).
func (p *proxy) Addr() string { return p.addr }

// Restore listens again on the proxy's address.
func (p *proxy) Restore() { p.listen(p.addr) }

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.addr = ln.Addr().String()
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // cut since the Accept
				p.mu.Unlock()
				c.Close()
				up.Close()
				continue
			}
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Go(func() { p.pipe(c, up) })
			p.wg.Go(func() { p.pipe(up, c) })
		}
	})
}

// pipe copies src to dst until either ends, then closes and forgets both.
func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes the listener and every proxied connection.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}
