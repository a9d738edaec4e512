//go:build linux

package fastpath

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Fanout serves fast streams: connections whose subscription has a Poller
// (its stream calls a function when it has something, as a hub stream
// does). A fast stream has no goroutine while it is idle:
//
//   - its stream calls notify when an event is ready (a publisher's
//     goroutine), which puts it on the ready list of its writer loop;
//   - the loop's goroutine, running only while its ready list is not
//     empty, takes the Poller's steps and writes each message with one
//     non-blocking write(2) on the raw socket;
//   - a write that does not fit in the socket hands the stream to a slow
//     path of its own: a goroutine that writes with the write timeout as
//     deadline, while the stream's source queues what comes meanwhile (the
//     hub's bounded queue), until it has caught up and gives the stream
//     back; it waits for the socket in Go's poller, through an os.File on
//     the stream's own descriptor, made the first time and kept until the
//     stream ends, so that a stream that goes back and forth (a client
//     that keeps its window nearly full) pays a goroutine per trip, not a
//     dup and a registration;
//   - one epoll instance, watched by one goroutine parked in Go's poller,
//     notices a client that hangs up or sends bytes after its request;
//   - one keep-alive sweeper (a timer, per fanout) marks the streams idle
//     for KeepAlive, which then get the keep-alive frame from their loop.
//
// The fanout's goroutines run only while it has streams or work: the
// watcher from the first stream to the last, a loop while its ready list is
// not empty, a slow path while its stream is behind, the sweeper while it
// runs. Wait waits for them.
type Fanout struct {
	opts       Options
	sweepEvery time.Duration
	loops      []*loop
	next       atomic.Uint32
	epoch      time.Time
	// trips counts the streams handed to a slow path, files the
	// descriptors the slow path registered with Go's poller (at most one
	// per stream): see Trips.
	trips, files atomic.Uint64

	mu      sync.Mutex
	streams int
	hup     *hangups    // the hang-up watcher, while streams > 0
	sweeper *time.Timer // armed while streams > 0
	armed   bool        // sweeper is armed (counted in running)
	// running counts the fanout's goroutines that are running or are about
	// to (an armed sweeper counts as one); idle is closed when it reaches
	// zero, for wait.
	running int
	idle    chan struct{}
}

// New returns a Fanout configured by opts (Done is required).
func New(opts Options) *Fanout {
	f := &Fanout{
		opts:       opts,
		sweepEvery: max(opts.KeepAlive/4, time.Millisecond),
		epoch:      time.Now(),
	}
	n := runtime.GOMAXPROCS(0)
	for range n {
		f.loops = append(f.loops, &loop{f: f})
	}
	return f
}

// now is the fanout's clock: nanoseconds since its creation.
func (f *Fanout) now() int64 { return int64(time.Since(f.epoch)) }

// started counts a goroutine of the fanout that is about to run.
func (f *Fanout) started() {
	f.mu.Lock()
	f.running++
	f.mu.Unlock()
}

// stopped counts a goroutine of the fanout that has finished.
func (f *Fanout) stopped() {
	f.mu.Lock()
	f.stoppedLocked()
	f.mu.Unlock()
}

func (f *Fanout) stoppedLocked() {
	f.running--
	if f.running == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// Wait returns once none of the fanout's goroutines is running, or ctx
// ended (with its error). Call it once every stream has ended (Done was
// called and has called release), so that no goroutine of the fanout
// outlives the transport.
func (f *Fanout) Wait(ctx context.Context) error {
	f.mu.Lock()
	if f.running == 0 {
		f.mu.Unlock()
		return nil
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Count returns the number of streams registered (Run to release).
func (f *Fanout) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams
}

// Trips returns how many times a stream was handed to a slow path, and how
// many descriptors the slow path registered with Go's poller meanwhile (at
// most one per stream).
func (f *Fanout) Trips() (trips, files uint64) { return f.trips.Load(), f.files.Load() }

// Stream returns a fast stream that will write sub's messages (sub is a
// *listen.Subscription, served by its Poller: see Attach) to conn, the
// first one after *head (if head is not nil; shared, never modified), or
// nil, having changed nothing, when it cannot be
// one: conn is not a socket (a TLS connection), or sub has no Poller. The
// stream is ready but not running: what it is notified of waits until Run.
// owner is what Options.Done and Options.KeptAlive get.
//
// The transport's end is the stream's cause (Cancel, Cause): a fast stream
// has no context of its own, and nothing on the fast path reads a
// request's values (Attach declines a subscription whose shaping asks
// CanRead).
//
// A fast stream keeps the socket's descriptor only: Stream duplicates it
// and closes conn, whose per-connection objects (descriptor, poller
// registration, addresses) a stream would otherwise hold for its life. The
// slow path registers that descriptor with Go's poller the first time it
// needs to wait for the socket (Stream.file), and keeps it so. A stream
// that cannot be set up (no descriptor, no watch for its client's end) is
// served nonetheless, and ends at once.
func (f *Fanout) Stream(conn net.Conn, sub any, head *[]byte, owner any) *Stream {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil // such as a TLS connection
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	fs := &Stream{f: f, owner: owner, fd: -1}
	if head != nil && len(*head) > 0 {
		fs.head, fs.headed = head, true
	}
	fs.l = f.loops[int(f.next.Add(1))%len(f.loops)]
	// Owned by the caller until Run schedules it: a notify or a Cancel that
	// comes first only marks it pending.
	fs.state.Store(stateLoop)
	fs.attention.Store(true) // the acknowledgement is the Poller's
	p, ok := Attach(sub, fs.notify, fs)
	if !ok {
		return nil
	}
	fs.p = p
	var derr error
	if err := rc.Control(func(s uintptr) { fs.fd, derr = dupCloseOnExec(int(s)) }); err != nil || derr != nil {
		fs.Cancel(errors.Join(err, derr))
	}
	_ = conn.Close() // the duplicate keeps the socket open
	if fs.fd >= 0 {
		if err := f.add(fs); err != nil {
			// Nothing would see this client leave: end the stream at once.
			fs.Cancel(err)
		}
	}
	return fs
}

// Run starts serving fs, a stream of Stream (once): its acknowledgement is
// written, then what it was notified of.
func (fs *Stream) Run() {
	fs.l.schedule(fs)
}

// dupCloseOnExec duplicates fd (close-on-exec).
func dupCloseOnExec(fd int) (int32, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if e != 0 {
		return -1, os.NewSyscallError("fcntl", e)
	}
	return int32(r), nil
}

// add registers fs with a loop, the sweeper and the hang-up watcher.
func (f *Fanout) add(fs *Stream) error {
	f.mu.Lock()
	if f.streams == 0 {
		hup, err := newHangups()
		if err != nil {
			f.mu.Unlock()
			return err
		}
		f.hup = hup
		f.running++ // the watcher
		f.armSweeper()
	}
	f.streams++
	fs.added = true
	hup := f.hup
	f.mu.Unlock()

	fs.lastWrite.Store(f.now())
	l := fs.l
	l.mu.Lock()
	fs.idx = int32(len(l.streams))
	l.streams = append(l.streams, fs)
	l.mu.Unlock()
	return hup.watch(fs)
}

// remove unregisters fs (after its stream has ended; before its connection
// is closed). The last stream stops the watcher and the sweeper.
func (f *Fanout) remove(fs *Stream) {
	if !fs.added {
		return // add failed before registering it
	}
	// The watcher fs registered with stays while fs is counted.
	f.mu.Lock()
	hup := f.hup
	f.mu.Unlock()
	hup.unwatch(fs)
	l := fs.l
	l.mu.Lock()
	last := l.streams[len(l.streams)-1]
	l.streams[fs.idx], last.idx = last, fs.idx
	l.streams[len(l.streams)-1] = nil
	l.streams = l.streams[:len(l.streams)-1]
	if cap(l.streams) > 64 && len(l.streams) < cap(l.streams)/4 {
		l.streams = slices.Clip(append([]*Stream(nil), l.streams...))
	}
	l.mu.Unlock()

	f.mu.Lock()
	f.streams--
	var stop *hangups
	if f.streams == 0 {
		stop, f.hup = f.hup, nil
		if f.armed && f.sweeper.Stop() {
			f.armed = false
			f.stoppedLocked()
		}
	}
	f.mu.Unlock()
	if stop != nil {
		stop.close()
		f.stopped() // the watcher has returned
	}
}

// armSweeper arms the keep-alive sweeper. f.mu is held.
func (f *Fanout) armSweeper() {
	if f.armed {
		return
	}
	f.armed = true
	f.running++
	if f.sweeper == nil {
		f.sweeper = time.AfterFunc(f.sweepEvery, f.sweep)
		return
	}
	f.sweeper.Reset(f.sweepEvery)
}

// sweep marks the streams that have written nothing for KeepAlive and
// wakes them (their loop writes the keep-alive), then arms itself again
// while streams remain.
func (f *Fanout) sweep() {
	now := f.now()
	var due []*Stream
	for _, l := range f.loops {
		due = due[:0]
		l.mu.Lock()
		for _, fs := range l.streams {
			if now-fs.lastWrite.Load() >= int64(f.opts.KeepAlive) {
				due = append(due, fs)
			}
		}
		l.mu.Unlock()
		for _, fs := range due {
			fs.ping.Store(true)
			fs.notify()
		}
	}
	f.mu.Lock()
	f.armed = false
	if f.streams > 0 {
		f.armSweeper()
	}
	f.stoppedLocked()
	f.mu.Unlock()
}

// loop is one writer loop: the streams it owns, and the ones ready to
// write. Its goroutine (drain) runs only while some are ready.
type loop struct {
	f *Fanout

	mu      sync.Mutex
	ready   []*Stream // to pump, in the order they became ready
	spare   []*Stream // a drained ready list, kept for reuse
	running bool      // drain is running
	streams []*Stream // every stream of the loop (Stream.idx)

	// Used by drain only.
	buf []byte
	now int64
}

// schedule puts fs on the ready list and makes sure drain runs.
func (l *loop) schedule(fs *Stream) {
	l.mu.Lock()
	l.ready = append(l.ready, fs)
	start := !l.running
	l.running = true
	l.mu.Unlock()
	if start {
		l.f.started()
		go l.drain() // ends once the ready list is empty; counted for wait
	}
}

// drain pumps the ready streams until there are none.
func (l *loop) drain() {
	defer l.f.stopped()
	l.mu.Lock()
	batch := l.spare
	l.spare = nil
	for len(l.ready) > 0 {
		batch, l.ready = l.ready, batch[:0]
		l.mu.Unlock()
		l.now = l.f.now()
		for i, fs := range batch {
			fs.pumpOnLoop(l)
			batch[i] = nil
		}
		if cap(l.buf) > maxKeptBuffer {
			l.buf = nil
		}
		l.mu.Lock()
	}
	l.spare = batch[:0]
	l.running = false
	l.mu.Unlock()
}

// Who owns a fast stream (Stream.state): nobody (idle: the next notify
// schedules it on its loop), its loop (scheduled or being pumped), its slow
// path, or nobody ever again (ended). statePending records a notify that
// came while it was owned: the owner pumps once more before letting go.
const (
	stateIdle uint32 = iota
	stateLoop
	stateSlow
	stateEnded
	statePending uint32 = 1 << 4
)

// Stream is one fast stream. Its Poller, head, slow and the connection's
// writes belong to whoever owns it (see state); idx to its loop's lock.
type Stream struct {
	// What notifying it and writing each message read and write comes
	// first, in 64 bytes (one cache line): a stream's state is out of the
	// CPU's caches by the time its next event comes.
	state atomic.Uint32
	ping  atomic.Bool // the sweeper asks for a keep-alive
	// attention: something other than an offered list change woke the
	// stream (an event handed over, an end, a keep-alive): its next pump
	// goes through the Poller. Set by notify, cleared by the loop.
	attention atomic.Bool
	// offered is the list change the hub offered (core.Offerer): its kind
	// + 1, 0 when none is pending.
	offered atomic.Uint32
	p       Poller
	fd      int32 // the socket (a duplicate of the connection's)
	// headed: head is still to be written, with the first frame.
	headed    bool
	added     bool // registered with the fanout (add), removed by remove
	f         *Fanout
	l         *loop
	lastWrite atomic.Int64 // fanout clock of the last write

	cause atomic.Pointer[error] // the transport's end (see Cancel), first one kept
	id    string                // the subscription's id as JSON, for offered list changes
	// head is written with the first frame (headed), then forgotten. It is
	// shared (a pointer, 8 bytes where a slice takes 24: the stream fits
	// in 128 bytes) and never modified.
	head *[]byte

	owner any // Options.Done's and KeptAlive's
	// file owns fd once the slow path first needed to wait for the socket:
	// an os.File on fd itself (no dup), registered with Go's poller once,
	// kept until the stream ends (about 200 bytes; nil while the stream
	// never filled its socket).
	file *os.File
	gen  uint32 // its registration with the fanout's hang-up watcher (0: none)
	idx  int32  // in l.streams
}

// Cancel ends the stream from the transport's side with cause (a drain,
// an early ending, a hang-up, a failed write or registration), the first
// one kept, and wakes it: its Poller then ends it by that cause (see
// Attach). It never blocks.
func (fs *Stream) Cancel(cause error) {
	if fs.cause.CompareAndSwap(nil, &cause) {
		fs.notify()
	}
}

// Cause returns the cause the stream was ended with (Cancel), or nil.
func (fs *Stream) Cause() error {
	if c := fs.cause.Load(); c != nil {
		return *c
	}
	return nil
}

// notify wakes fs: an event may be ready, it may have ended, or a
// keep-alive is due. It never blocks.
func (fs *Stream) notify() {
	fs.attention.Store(true)
	fs.wake()
}

// wake schedules fs on its loop, or marks it pending when it is owned.
func (fs *Stream) wake() {
	for {
		s := fs.state.Load()
		switch {
		case s == stateIdle:
			if fs.state.CompareAndSwap(s, stateLoop) {
				fs.l.schedule(fs)
				return
			}
		case s == stateEnded || s&statePending != 0:
			return
		default:
			if fs.state.CompareAndSwap(s, s|statePending) {
				return
			}
		}
	}
}

// Offer implements core.Offerer: it keeps a list change of kind for the
// stream's next pump, which writes it without the Poller unless something
// else woke the stream meanwhile.
func (fs *Stream) Offer(kind uint8) bool {
	if fs.id == "" || int(kind) >= len(ListChanged) || ListChanged[kind] == nil || !fs.offered.CompareAndSwap(0, uint32(kind)+1) {
		return false
	}
	fs.wake()
	return true
}

// TakeOffered implements core.Offerer.
func (fs *Stream) TakeOffered() (uint8, bool) {
	if k := fs.offered.Swap(0); k != 0 {
		return uint8(k - 1), true
	}
	return 0, false
}

// Direct implements core.Offerer. It is called once, by Attach, before the
// stream runs.
func (fs *Stream) Direct(id string) { fs.id = id }

// release gives up ownership (owner is stateLoop or stateSlow) once
// nothing is pending. It reports false when a notify came meanwhile: the
// owner keeps the stream and pumps it again.
func (fs *Stream) release(owner uint32) bool {
	if fs.state.CompareAndSwap(owner, stateIdle) {
		return true
	}
	fs.state.Store(owner) // clear the pending mark
	return false
}

// pumpOnLoop takes fs's steps on its loop with non-blocking writes, until
// nothing is ready, a write does not fit (the slow path takes over) or the
// stream ended.
func (fs *Stream) pumpOnLoop(l *loop) {
	fs.state.Store(stateLoop) // clear the pending mark: this pump sees it
	for {
		if !fs.attention.Swap(false) {
			// Only offers came: write the list change, if one is
			// pending, with no round through the Poller.
			if k, ok := fs.TakeOffered(); ok {
				if !fs.writeOffered(l, k) {
					return // slow path
				}
				continue
			}
			if fs.release(stateLoop) {
				return
			}
			continue
		}
		if !fs.pollOnLoop(l) {
			return
		}
	}
}

// writeOffered writes an offered list change of kind with a non-blocking
// write. It reports false when the slow path took the rest. A failed write
// cancels the stream (its Poller then closes the subscription as
// listen.Disconnected).
func (fs *Stream) writeOffered(l *loop, kind uint8) bool {
	buf := append(l.buf[:0], fs.f.opts.Prefix...)
	start := len(buf)
	buf = append(append(append(buf, ListChanged[kind]...), fs.id...), "}}}"...)
	buf = fs.f.frame(buf, start)
	l.buf = buf
	n, err := writeRaw(int(fs.fd), buf)
	switch {
	case n == len(buf):
		fs.lastWrite.Store(l.now)
	case err != nil && err != syscall.EAGAIN:
		fs.Cancel(err)
	default: // the socket is full
		fs.toSlow(buf[max(n, 0):], frameOffered)
		return false
	}
	return true
}

// pollOnLoop takes fs's Poller's steps until it waits (true) or the stream
// went to the slow path or ended (false).
func (fs *Stream) pollOnLoop(l *loop) bool {
	for {
		buf := l.buf[:0]
		if fs.headed {
			buf = append(buf, *fs.head...)
		}
		buf = append(buf, fs.f.opts.Prefix...)
		start := len(buf)
		step, buf := fs.p.Next(buf)
		l.buf = buf
		switch step {
		case StepWait:
			if fs.ping.Load() {
				fs.ping.Store(false)
				if l.now-fs.lastWrite.Load() >= int64(fs.f.opts.KeepAlive) {
					if !fs.pingOnLoop(l) {
						return false // slow path
					}
					continue
				}
			}
			return true
		case StepDone:
			fs.end()
			return false
		}
		buf = fs.f.frame(buf, start)
		l.buf = buf
		n, err := writeRaw(int(fs.fd), buf)
		switch {
		case n == len(buf):
			fs.wroteHead()
			fs.lastWrite.Store(l.now)
			fs.p.Written(nil)
		case err != nil && err != syscall.EAGAIN:
			fs.wroteHead()
			fs.p.Written(err)
		default: // the socket is full
			fs.toSlow(buf[max(n, 0):], frameMessage)
			return false
		}
	}
}

// pingOnLoop writes a keep-alive with a non-blocking write. It reports
// false when the slow path took the rest.
func (fs *Stream) pingOnLoop(l *loop) bool {
	n, err := writeRaw(int(fs.fd), fs.f.opts.KeepAliveFrame)
	switch {
	case n == len(fs.f.opts.KeepAliveFrame):
		fs.lastWrite.Store(l.now)
		fs.keptAlive()
	case err != nil && err != syscall.EAGAIN:
		fs.Cancel(err)
	default:
		fs.toSlow(fs.f.opts.KeepAliveFrame[max(n, 0):], frameKeepAlive)
		return false
	}
	return true
}

// writeRaw is one non-blocking write(2), retried only when interrupted. The
// socket stays open while its stream's owner writes (it is closed only
// after the stream ended), so its descriptor is valid.
func writeRaw(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		return n, err
	}
}

// wroteHead forgets head once the first frame was written (or handed to
// the slow path), touching it only then.
func (fs *Stream) wroteHead() {
	if fs.headed {
		fs.head, fs.headed = nil, false
	}
}

// What the frame a slow path starts with was (toSlow).
const (
	frameMessage   = iota // the Poller's message: its Written gets the result
	frameKeepAlive        // a keep-alive
	frameOffered          // an offered list change
)

// toSlow hands fs from its loop to a slow path of its own, which first
// writes rest (the part of a frame the socket did not take; what the frame
// was: frameMessage and the like).
func (fs *Stream) toSlow(rest []byte, frame int) {
	fs.wroteHead()
	rest = slices.Clone(rest)
	for {
		s := fs.state.Load()
		if fs.state.CompareAndSwap(s, stateSlow|s&statePending) {
			break
		}
	}
	fs.f.trips.Add(1)
	fs.f.started()
	go fs.slow(rest, frame) // ends once caught up or done; counted for wait
}

// slow is the slow path: blocking writes, each with the write timeout as
// deadline, until nothing is ready; the stream then goes back to its loop.
// Meanwhile the stream's source queues what is published (the hub's
// bounded queue and its overflow policy), so the loops never wait for this
// client. It drives the Poller only (which takes an offered list change
// first): the stream goes back to its loop with attention set.
func (fs *Stream) slow(rest []byte, frame int) {
	defer fs.f.stopped()
	err := fs.writeBlocking(rest)
	switch {
	case frame == frameMessage:
		fs.p.Written(err)
	case err != nil:
		fs.Cancel(err)
	case frame == frameKeepAlive:
		fs.keptAlive()
	}
	// The pending mark is not cleared here: a notify that came while the
	// rest was written may be one the Poller's next step does not look for
	// (it may wait at once after a write), so only release clears it,
	// having failed: the next step then looks.
	var buf []byte
	for {
		buf = append(buf[:0], fs.f.opts.Prefix...)
		step, msg := fs.p.Next(buf)
		buf = msg
		switch step {
		case StepWait:
			if fs.ping.Swap(false) && fs.f.now()-fs.lastWrite.Load() >= int64(fs.f.opts.KeepAlive) {
				if err := fs.writeBlocking(fs.f.opts.KeepAliveFrame); err != nil {
					fs.Cancel(err)
				} else {
					fs.keptAlive()
				}
				continue
			}
			// Caught up: the stream goes back to its loop (which may hand
			// it to a new slow path at once; fs.file stays for it).
			fs.attention.Store(true)
			if fs.release(stateSlow) {
				return
			}
			continue
		case StepDone:
			fs.end()
			return
		}
		buf = fs.f.frame(buf, len(fs.f.opts.Prefix))
		fs.p.Written(fs.writeBlocking(buf))
		if cap(buf) > maxKeptBuffer {
			buf = nil
		}
	}
}

// keptAlive reports a keep-alive written to Options.KeptAlive, if set (a
// panic in it is recovered and ignored).
func (fs *Stream) keptAlive() {
	hook := fs.f.opts.KeptAlive
	if hook == nil {
		return
	}
	defer func() { _ = recover() }()
	hook(fs.owner)
}

// frame ends the frame in buf whose message starts at start: Clean on the
// message, then Suffix.
func (f *Fanout) frame(buf []byte, start int) []byte {
	if f.opts.Clean != nil {
		f.opts.Clean(buf[start:])
	}
	return append(buf, f.opts.Suffix...)
}

// writeBlocking writes b within the write timeout, in Go's poller (through
// fs.file, made when first needed).
func (fs *Stream) writeBlocking(b []byte) error {
	if fs.file == nil {
		// The descriptor is non-blocking (it shares the taken-over
		// socket's file description), so os.NewFile registers it with
		// the poller, and the file's deadlines work. From now on the file
		// owns it (letGo closes the file).
		fs.file = os.NewFile(uintptr(fs.fd), "fastpath-slow")
		fs.f.files.Add(1)
	}
	if err := fs.file.SetWriteDeadline(time.Now().Add(fs.f.opts.WriteTimeout)); err != nil {
		return err
	}
	_, err := fs.file.Write(b)
	if err == nil {
		fs.lastWrite.Store(fs.f.now())
	}
	return err
}

// end ends fs once its Poller is done: its owner lets it go for good, and
// a goroutine of its own calls Options.Done (in streamhttp: the slot,
// OnClose, then letGo), so that a slow OnClose holds no loop. That
// goroutine ends with Done, which the transport waits for before Wait.
func (fs *Stream) end() {
	fs.state.Store(stateEnded)
	go fs.f.opts.Done(fs.owner, fs.letGo)
}

// letGo unregisters fs and closes its socket.
func (fs *Stream) letGo() {
	if fs.fd < 0 {
		return
	}
	fs.f.remove(fs)
	if fs.file != nil {
		_ = fs.file.Close() // its descriptor is fd
		return
	}
	_ = syscall.Close(int(fs.fd))
}

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
		Fd:     fs.fd,
		Pad:    int32(fs.gen),
	}
	if err := syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_ADD, int(fs.fd), &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	fd := int(fs.fd)
	if fd >= len(h.byFD) {
		h.byFD = slices.Grow(h.byFD, fd+1-len(h.byFD))[:fd+1]
	}
	h.byFD[fd] = watched{fs: fs, gen: fs.gen}
	return nil
}

// unwatch forgets fs; its socket must still be open.
func (h *hangups) unwatch(fs *Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fd := int(fs.fd); fd < len(h.byFD) && h.byFD[fd].fs == fs {
		h.byFD[fd] = watched{}
		_ = syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
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
