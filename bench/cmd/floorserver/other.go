//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "floorserver: Linux only (it writes to raw non-blocking sockets and watches them with epoll)")
	os.Exit(1)
}
