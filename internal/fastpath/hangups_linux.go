//go:build linux

package fastpath

import (
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
)

// hangups is one epoll instance that watches every fast stream's socket
// for the client's end: a hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR) or any
// byte sent after the listen request (EPOLLIN). Each socket is armed once
// (EPOLLONESHOT): the first such event ends its stream, so a client that
// keeps sending costs one event, not one read per byte.
//
// Its one goroutine (run) waits in Go's poller on the epoll descriptor
// itself (an epoll instance is readable while it has events), so no thread
// is held while nothing happens. close ends it.
type hangups struct {
	file *os.File
	rc   syscall.RawConn
	epfd int
	done chan struct{} // closed when run returns

	mu   sync.Mutex
	byFD []watched // indexed by descriptor
	gen  uint32
}

// watched is a registered stream and the generation of its registration
// (a descriptor number is reused once its connection is closed; a stale
// event carries an older generation).
type watched struct {
	fs  *Stream
	gen uint32
}

func newHangups() (*hangups, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	file := os.NewFile(uintptr(epfd), "fastpath-hangups")
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, err
	}
	h := &hangups{file: file, rc: rc, epfd: epfd, done: make(chan struct{})}
	go h.run()
	return h, nil
}

// watch arms fs's socket.
func (h *hangups) watch(fs *Stream) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	fs.gen = h.gen
	ev := syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd:     int32(fs.fd),
		Pad:    int32(fs.gen),
	}
	if err := syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_ADD, fs.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	if fs.fd >= len(h.byFD) {
		h.byFD = slices.Grow(h.byFD, fs.fd+1-len(h.byFD))[:fs.fd+1]
	}
	h.byFD[fs.fd] = watched{fs: fs, gen: fs.gen}
	return nil
}

// unwatch forgets fs; its socket must still be open.
func (h *hangups) unwatch(fs *Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fs.fd < len(h.byFD) && h.byFD[fs.fd].fs == fs {
		h.byFD[fs.fd] = watched{}
		_ = syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_DEL, fs.fd, nil)
	}
}

// close ends run and closes the epoll instance.
func (h *hangups) close() {
	_ = h.file.Close() // wakes run, whose wait then fails
	<-h.done
}

// run waits for events and ends the streams they are about.
func (h *hangups) run() {
	defer close(h.done)
	events := make([]syscall.EpollEvent, 128)
	for {
		n := 0
		err := h.rc.Read(func(fd uintptr) bool {
			for {
				var err error
				n, err = syscall.EpollWait(int(fd), events, 0)
				if err != syscall.EINTR {
					if err != nil {
						n = 0
					}
					return n > 0 // else wait until the epoll instance is readable
				}
			}
		})
		if err != nil {
			return // closed
		}
		for _, ev := range events[:n] {
			h.mu.Lock()
			var fs *Stream
			if fd := int(ev.Fd); fd < len(h.byFD) && h.byFD[fd].gen == uint32(ev.Pad) {
				fs = h.byFD[fd].fs
			}
			h.mu.Unlock()
			if fs == nil {
				continue
			}
			switch {
			case ev.Events&syscall.EPOLLERR != 0:
				fs.Cancel(errConnError)
			case ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP) != 0:
				fs.Cancel(io.EOF)
			default:
				fs.Cancel(fs.f.opts.UnexpectedBytes)
			}
		}
	}
}
