package testkit

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy in front of a server (a broker, in the
// tests of the bridges between instances): cutting it partitions the
// clients that dial through it, and only them, until it is restored on the
// same address. Its goroutines (one accept loop, two per proxied
// connection) end at Cut and, at the latest, with the test.
type Proxy struct {
	t        testing.TB
	addr     string
	upstream string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]struct{}
	stalled bool // Stall: bytes are read and dropped, connections kept
	wg      sync.WaitGroup
}

// NewProxy starts a proxy on a free loopback port that forwards each
// connection to upstream (host:port). It is cut and waited for when the
// test ends.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testkit: proxy: %v", err)
	}
	p := &Proxy{t: t, addr: ln.Addr().String(), upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
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
			if p.ln != ln { // cut since the Accept: this connection is cut too
				p.mu.Unlock()
				c.Close()
				up.Close()
				continue
			}
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}()
}

// pipe copies src to dst until either ends, then closes both and forgets
// them, so that a test making many connections does not keep them all.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		stalled := p.stalled
		p.mu.Unlock()
		if n > 0 && !stalled {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Stall makes the proxy stop forwarding without closing anything: what
// either side sends is read and dropped, on the connections open now and
// on those accepted later, until Cut. To the peers it is a silent drop (a
// path that black-holes packets), which only their keep-alives reveal.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Cut closes the listener and every proxied connection, and ends a Stall.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the proxy's address.
func (p *Proxy) Restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("testkit: proxy: %v", err)
	}
	p.serve(ln)
}
