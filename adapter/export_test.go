package adapter

import "github.com/mcplisten/listen"

// Versions returns the protocol versions b's server lists, for the tests.
func Versions(b *Bridge) []string { return b.versions }

// ServerInfo returns b's server's implementation, for the tests.
func ServerInfo(b *Bridge) listen.Implementation { return b.info }
