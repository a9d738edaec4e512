package testkit

// ProxyConns is the number of proxied connections p still holds (two per
// client: its own and the upstream one).
func ProxyConns(p *Proxy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}
