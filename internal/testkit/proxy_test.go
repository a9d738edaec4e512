package testkit_test

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/testkit"
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

	p := testkit.NewProxy(t, ln.Addr().String())
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

	p := testkit.NewProxy(t, ln.Addr().String())
	for range 20 {
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		_, err = c.Read(make([]byte, 1))
		assert.Error(t, err, "the upstream closed it")
		c.Close()
	}
	require.Eventually(t, func() bool { return testkit.ProxyConns(p) == 0 }, 5*time.Second, time.Millisecond)
}

// A stalled proxy keeps its connections open but forwards nothing; a Cut
// ends the stall, and after Restore bytes flow again.
func TestProxyStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { // an echo server; ends when ln is closed
		defer close(done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { // ends when the connection does
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p := testkit.NewProxy(t, ln.Addr().String())
	t.Cleanup(func() { p.Cut(); ln.Close(); <-done })

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	rd := bufio.NewReader(c)
	_, err = c.Write([]byte("one\n"))
	require.NoError(t, err)
	got, err := rd.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "one\n", got)

	p.Stall()
	_, err = c.Write([]byte("two\n"))
	require.NoError(t, err, "the connection stays open")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = rd.ReadString('\n')
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "nothing comes back: %v", err)

	p.Cut()
	p.Restore()
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Write([]byte("three\n"))
	require.NoError(t, err)
	got, err = bufio.NewReader(c2).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "three\n", got)
}
