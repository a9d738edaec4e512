//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Why a stream was closed, as reported to Hooks.Closed.
var (
	errHangUp       = errors.New("client hung up")
	errWriteFailed  = errors.New("write failed")
	errSlowOverflow = errors.New("slow-path queue full")
	errSlowTimeout  = errors.New("slow-path write missed its deadline")
	errEngineClosed = errors.New("engine closed")
)

// Hooks let tests (and nothing else) watch a stream's life. Each runs on the
// goroutine of the loop that owns the stream and must not block.
type Hooks struct {
	// Opened runs when a loop has taken a new stream: notifications
	// published from then on reach it.
	Opened func(id string)
	// Slow runs when a stream leaves its loop's fast path, Fast when it
	// comes back to it.
	Slow, Fast func(id string)
	// Closed runs once per stream when it is closed, with the reason.
	Closed func(id string, reason error)
}

// engineOptions configure newEngine.
type engineOptions struct {
	// Loops is the number of writer loops (≥ 1).
	Loops int
	// WriteTimeout bounds each write of the slow path.
	WriteTimeout time.Duration
	// SlowQueue bounds the notifications queued for one slow stream.
	SlowQueue int
	// SendBuffer, if positive, sets each stream socket's SO_SNDBUF (0:
	// the kernel's default, autotuned).
	SendBuffer int
	Hooks      Hooks
}

// engine owns the open streams once acknowledged.
type engine struct {
	opts  engineOptions
	loops []*loop
	epfd  int
	// wake is a pipe whose read end is in the epoll set: writing to it ends
	// the watcher.
	wake [2]int

	next  atomic.Uint64 // stream serial numbers; also spreads streams over loops
	open  atomic.Int64  // streams open
	slowN atomic.Int64  // streams on the slow path now
	// mu orders add's hand-over against Close: once closed is set, no
	// stream is being handed to a loop, and the loops close what they got.
	mu     sync.RWMutex
	closed bool
	done   chan struct{} // closed by Close: loops and slow paths stop
	wg     sync.WaitGroup
	once   sync.Once
}

// note is one notification, encoded once: a stream's frame is Prefix, its
// id, Suffix.
type note struct {
	tools          bool   // tools/list_changed (else resources/updated)
	uri            string // resources/updated only
	prefix, suffix []byte
}

// stream is an acknowledged listen stream. Its loop owns every field after
// the hand-over.
type stream struct {
	fd     int
	serial uint32
	idx    int    // position in its loop's streams
	id     []byte // the JSON-RPC id, compact JSON
	tools  bool
	uris   []string
	slow   *slowPath // nil on the fast path
	closed bool
}

// Message kinds of a loop's control channel.
const (
	msgAdd = iota
	msgPublish
	msgHangUp
	msgSlowIdle // the slow path's queue is empty: may it hand the stream back?
	msgSlowDead // the slow path's write failed or missed its deadline
)

type message struct {
	kind   int
	s      *stream
	n      *note
	fd     int32
	serial uint32
	sp     *slowPath
	err    error
	first  []byte
	reply  chan bool
}

// loop is one writer loop and the streams it owns.
type loop struct {
	e       *engine
	index   int
	ctl     chan message
	streams []*stream
	byFD    []*stream // indexed by descriptor
	buf     []byte
}

func newEngine(opts engineOptions) (*engine, error) {
	if opts.Loops < 1 || opts.Loops > 256 || opts.SlowQueue < 1 || opts.WriteTimeout <= 0 {
		return nil, fmt.Errorf("floorserver: bad engine options %+v", opts)
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	e := &engine{opts: opts, epfd: epfd, done: make(chan struct{})}
	if err := syscall.Pipe2(e.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(e.wake[0]), Pad: -1}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, e.wake[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(e.wake[0])
		syscall.Close(e.wake[1])
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	for i := range opts.Loops {
		l := &loop{e: e, index: i, ctl: make(chan message, 1024), buf: make([]byte, 0, 512)}
		e.loops = append(e.loops, l)
		e.wg.Add(1)
		go l.run()
	}
	e.wg.Add(1)
	go e.watch()
	return e, nil
}

// add hands a stream (a non-blocking descriptor the engine now owns) to a
// loop, which writes first (the response header and the acknowledgement)
// before anything else: every notification published after the client
// could have seen its acknowledgement reaches it. It reports false, and
// closes fd, once the engine is closed.
func (e *engine) add(fd int, id []byte, tools bool, uris []string, first []byte) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		syscall.Close(fd)
		return false
	}
	if e.opts.SendBuffer > 0 {
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, e.opts.SendBuffer)
	}
	serial := e.next.Add(1)
	s := &stream{fd: fd, serial: uint32(serial) & 0xffffff, id: id, tools: tools, uris: uris}
	l := e.loops[serial%uint64(len(e.loops))]
	e.open.Add(1)
	l.ctl <- message{kind: msgAdd, s: s, first: first} // the loop runs until closed is set
	return true
}

// publish hands n to every loop and returns; the loops write it.
func (e *engine) publish(n *note) bool {
	for _, l := range e.loops {
		select {
		case l.ctl <- message{kind: msgPublish, n: n}:
		case <-e.done:
			return false
		}
	}
	return true
}

// Close closes every stream, ends every goroutine of the engine and waits
// for them. It is idempotent.
func (e *engine) Close() {
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		close(e.done)
		e.mu.Unlock()
		_, _ = syscall.Write(e.wake[1], []byte{0})
		e.wg.Wait()
		syscall.Close(e.epfd)
		syscall.Close(e.wake[0])
		syscall.Close(e.wake[1])
	})
}

// watch waits for hang-ups and tells the owning loop.
func (e *engine) watch() {
	defer e.wg.Done()
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(e.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			fmt.Fprintln(os.Stderr, "floorserver: epoll_wait:", err)
			return
		}
		for _, ev := range events[:n] {
			if ev.Pad == -1 {
				return // the wake pipe: Close
			}
			serial, li := uint32(ev.Pad)>>8, int(uint32(ev.Pad)&0xff)
			select {
			case e.loops[li].ctl <- message{kind: msgHangUp, fd: ev.Fd, serial: serial}:
			case <-e.done:
				return
			}
		}
	}
}

func (l *loop) run() {
	defer l.e.wg.Done()
	for {
		select {
		case m := <-l.ctl:
			l.handle(m)
		case <-l.e.done:
			for len(l.streams) > 0 {
				l.close(l.streams[len(l.streams)-1], errEngineClosed)
			}
			// Streams handed over but not yet taken: close them too.
			for {
				select {
				case m := <-l.ctl:
					if m.kind == msgAdd {
						syscall.Close(m.s.fd)
						l.e.open.Add(-1)
					}
				default:
					return
				}
			}
		}
	}
}

func (l *loop) handle(m message) {
	switch m.kind {
	case msgAdd:
		s := m.s
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | epollET, Fd: int32(s.fd), Pad: int32(s.serial<<8 | uint32(l.index))}
		if err := syscall.EpollCtl(l.e.epfd, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
			l.e.open.Add(-1)
			syscall.Close(s.fd)
			return
		}
		s.idx = len(l.streams)
		l.streams = append(l.streams, s)
		if s.fd >= len(l.byFD) {
			l.byFD = slices.Grow(l.byFD, s.fd+1-len(l.byFD))[:s.fd+1]
		}
		l.byFD[s.fd] = s
		if h := l.e.opts.Hooks.Opened; h != nil {
			h(string(s.id))
		}
		l.send(s, m.first)
	case msgPublish:
		l.publish(m.n)
	case msgHangUp:
		if int(m.fd) < len(l.byFD) {
			if s := l.byFD[m.fd]; s != nil && s.serial == m.serial {
				l.close(s, errHangUp)
			}
		}
	case msgSlowIdle:
		s := m.s
		back := s.closed || (s.slow == m.sp && len(m.sp.q) == 0)
		if back && !s.closed {
			s.slow = nil
			l.e.slowN.Add(-1)
			if h := l.e.opts.Hooks.Fast; h != nil {
				h(string(s.id))
			}
		}
		m.reply <- back
	case msgSlowDead:
		if s := m.s; !s.closed && s.slow == m.sp {
			l.close(s, m.err)
		}
	}
}

// publish writes n to every matching stream of the loop: one write(2) each
// on the fast path.
func (l *loop) publish(n *note) {
	// Closing a stream moves the last one into its slot: walk backwards so
	// that every stream is visited once.
	for i := len(l.streams) - 1; i >= 0; i-- {
		s := l.streams[i]
		if n.tools {
			if !s.tools {
				continue
			}
		} else if !slices.Contains(s.uris, n.uri) {
			continue
		}
		l.buf = append(append(append(l.buf[:0], n.prefix...), s.id...), n.suffix...)
		l.send(s, l.buf)
	}
}

// send writes frame to s: one non-blocking write(2) on the fast path; what
// does not fit goes to the slow path. frame is not kept.
func (l *loop) send(s *stream, frame []byte) {
	if s.slow != nil {
		l.enqueue(s, slices.Clone(frame))
		return
	}
	w, err := write(s.fd, frame)
	switch {
	case err == nil && w == len(frame):
	case err == nil || errors.Is(err, syscall.EAGAIN):
		l.toSlow(s, slices.Clone(frame[max(w, 0):]))
	default:
		l.close(s, fmt.Errorf("%w: %v", errWriteFailed, err))
	}
}

// write is one write(2), retried only when a signal interrupted it.
func write(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// close closes s and forgets it.
func (l *loop) close(s *stream, reason error) {
	if s.closed {
		return
	}
	s.closed = true
	last := l.streams[len(l.streams)-1]
	l.streams[s.idx], last.idx = last, s.idx
	l.streams[len(l.streams)-1] = nil
	l.streams = l.streams[:len(l.streams)-1]
	l.byFD[s.fd] = nil
	if sp := s.slow; sp != nil {
		sp.cut.Store(true)
		// Unblocks its write; the slow goroutine then ends by itself.
		_ = sp.conn.Close()
		l.e.slowN.Add(-1)
	}
	syscall.Close(s.fd) // also leaves the epoll set
	l.e.open.Add(-1)
	if h := l.e.opts.Hooks.Closed; h != nil {
		h(string(s.id), reason)
	}
}

// slowPath is one slow stream's queue and the goroutine writing it.
type slowPath struct {
	q    chan []byte
	conn net.Conn // a duplicate of the stream's descriptor in Go's poller
	cut  atomic.Bool
}

// toSlow moves s to a slow path of its own, rest being the unwritten part
// of the frame that did not fit.
func (l *loop) toSlow(s *stream, rest []byte) {
	conn, err := pollerConn(s.fd)
	if err != nil {
		l.close(s, fmt.Errorf("%w: slow path: %v", errWriteFailed, err))
		return
	}
	sp := &slowPath{q: make(chan []byte, l.e.opts.SlowQueue), conn: conn}
	s.slow = sp
	l.e.slowN.Add(1)
	if h := l.e.opts.Hooks.Slow; h != nil {
		h(string(s.id))
	}
	sp.q <- rest
	l.e.wg.Add(1)
	go l.runSlow(s, sp)
}

// pollerConn returns a net.Conn on a duplicate of fd, so that the slow path
// can wait with a deadline in Go's poller.
func pollerConn(fd int) (net.Conn, error) {
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "slow-stream")
	defer f.Close()
	return net.FileConn(f) // duplicates again
}

// enqueue queues frame for a slow stream, or closes it when its queue is
// full.
func (l *loop) enqueue(s *stream, frame []byte) {
	select {
	case s.slow.q <- frame:
	default:
		l.close(s, errSlowOverflow)
	}
}

// runSlow writes a slow stream's queue, each write with its own deadline,
// until the queue is empty and the loop takes the stream back, or a write
// fails, or the loop closed the stream.
func (l *loop) runSlow(s *stream, sp *slowPath) {
	defer l.e.wg.Done()
	defer sp.conn.Close()
	// tell sends m to the loop unless the engine is closing.
	tell := func(m message) bool {
		select {
		case l.ctl <- m:
			return true
		case <-l.e.done:
			return false
		}
	}
	reply := make(chan bool, 1)
	for {
		var frame []byte
		select {
		case frame = <-sp.q:
		default:
			// Empty: ask the loop, which alone fills the queue, to take the
			// stream back; it says no if a frame arrived meanwhile.
			if !tell(message{kind: msgSlowIdle, s: s, sp: sp, reply: reply}) {
				return
			}
			select {
			case back := <-reply:
				if back {
					return
				}
			case <-l.e.done:
				return
			}
			continue
		}
		if err := sp.conn.SetWriteDeadline(time.Now().Add(l.e.opts.WriteTimeout)); err != nil {
			return // closed by the loop
		}
		if _, err := sp.conn.Write(frame); err != nil {
			if sp.cut.Load() {
				return
			}
			reason := fmt.Errorf("%w: %v", errWriteFailed, err)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				reason = errSlowTimeout
			}
			tell(message{kind: msgSlowDead, s: s, sp: sp, err: reason})
			return
		}
	}
}

// epollET is EPOLLET as the uint32 of EpollEvent.Events (syscall declares
// it as a negative int).
const epollET = 1 << 31
