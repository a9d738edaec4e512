package main

import "testing"

// A non-loopback bind needs an allow-list of host names (DNS rebinding).
func TestCheckBind(t *testing.T) {
	tests := []struct {
		addr  string
		hosts []string
		ok    bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"[::1]:8080", nil, true},
		{"localhost:8080", nil, true},
		{"0.0.0.0:8080", nil, false},
		{":8080", nil, false},
		{"192.0.2.7:8080", nil, false},
		{"0.0.0.0:8080", []string{"mcp.example.com"}, true},
		{"no-port", nil, false},
	}
	for _, tt := range tests {
		err := checkBind(tt.addr, tt.hosts)
		if (err == nil) != tt.ok {
			t.Errorf("checkBind(%q, %v) = %v, want ok=%v", tt.addr, tt.hosts, err, tt.ok)
		}
	}
	if got := splitList(" a, ,b,"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("splitList = %q", got)
	}
}
