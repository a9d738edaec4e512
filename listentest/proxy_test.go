package listentest_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/listentest"
)

// A Proxy forwards a connection both ways; Cut ends it and refuses new
// ones; Restore serves the same address again.
func TestProxyCutAndRestore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	go func() { // an echo server; ends when ln is closed
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends when the connection does
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })

	p := listentest.NewProxy(t, ln.Addr().String())
	echo := func() (string, error) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		if _, err := c.Write([]byte("hi\n")); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	got, err := echo()
	require.NoError(t, err)
	assert.Equal(t, "hi\n", got)

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	p.Cut()
	_, err = bufio.NewReader(c).ReadString('\n')
	assert.Error(t, err, "a cut ends the proxied connection")
	_, err = echo()
	assert.Error(t, err, "and refuses new ones")

	p.Restore()
	got, err = echo()
	require.NoError(t, err)
	assert.Equal(t, "hi\n", got)
}

// A connection that ends by itself is forgotten: the proxy keeps only the
// connections still open.
func TestProxyForgetsEndedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { // closes each connection at once; ends when ln is closed
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })

	p := listentest.NewProxy(t, ln.Addr().String())
	for range 20 {
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		_, err = c.Read(make([]byte, 1))
		assert.Error(t, err, "the upstream closed it")
		c.Close()
	}
	require.Eventually(t, func() bool { return listentest.ProxyConns(p) == 0 }, 5*time.Second, time.Millisecond)
}
