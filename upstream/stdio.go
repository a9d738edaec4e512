package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultStdioBuffer is how many messages a listen on a Stdio transport
// may have waiting for its reader before it is ended (as fallen behind,
// an error wrapping ErrDropped: its Feed re-listens and reports the gap),
// so that one slow listen never stalls the others on the pipe.
const defaultStdioBuffer = 256

// stdioWriteTimeout bounds one write to an upstream's standard input, where
// the pipe supports deadlines.
const stdioWriteTimeout = 10 * time.Second

// Stdio is the stdio transport: every listen is a line written to the
// upstream's standard input, and the lines it writes to its standard
// output are routed to their listens by id and subscription id. One
// connection carries every listen; when it ends (the process exited, its
// output closed) every listen on it is dropped, and the next listen dials
// again, so a restarted upstream is listened to again.
//
// A Stdio is safe for concurrent use. Its reader goroutine, one per
// connection, ends when the connection's output ends or Close closes it.
type Stdio struct {
	// Dial starts the upstream (or connects to it) and returns what it
	// writes (its standard output) and what it reads (its standard input).
	// Closing both must end the upstream: Command returns such a Dial.
	Dial func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error)
	// MaxMessageBytes bounds one line; zero means 1 MiB.
	// A longer line cannot be routed, so it drops every listen of the
	// connection (each re-listens and reports its gap).
	MaxMessageBytes int
	// Buffer bounds the messages queued per listen: past it the listen is
	// ended as fallen behind (an error wrapping ErrDropped), so that one
	// slow listen never stalls the others on the pipe. Zero means 256.
	Buffer int

	mu     sync.Mutex
	conn   *stdioConn
	closed bool
}

// Command returns a Dial that starts the command newCmd returns (a new
// *exec.Cmd each time: a Cmd runs once), with pipes to its standard input
// and output (its standard error is left as newCmd set it). Closing the
// returned pair closes the upstream's input, then kills it if it has not
// exited within a second, and waits for it.
func Command(newCmd func() *exec.Cmd) func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	return func(context.Context) (io.ReadCloser, io.WriteCloser, error) {
		cmd := newCmd()
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			in.Close()
			return nil, nil, err
		}
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		p := &process{cmd: cmd, in: in, out: out}
		return p, p, nil
	}
}

// process is a started command: reading reads its output, writing writes
// its input, and the first Close ends it (input closed, then a kill after
// a second) and waits for it.
type process struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  io.ReadCloser
	once sync.Once
}

func (p *process) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p *process) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *process) Close() error {
	p.once.Do(func() {
		p.in.Close()
		done := make(chan struct{})
		go func() { // ends when the process has exited
			_ = p.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

// Listen implements Transport.
func (t *Stdio) open(ctx context.Context, id jsonrpc.ID, request []byte) (messages, error) {
	c, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	buf := t.Buffer
	if buf <= 0 {
		buf = defaultStdioBuffer
	}
	m := &stdioMessages{c: c, id: id, ch: make(chan []byte, buf), done: make(chan struct{})}
	if err := c.add(m); err != nil {
		return nil, err
	}
	if err := c.write(request); err != nil {
		c.remove(m)
		return nil, err
	}
	return m, nil
}

// Close ends the current connection (and with it the upstream, for a
// Dial made by Command): every listen on it is dropped. Later Listens
// fail with ErrClosed. It waits for the connection's reader.
func (t *Stdio) Close() {
	t.mu.Lock()
	c := t.conn
	t.conn, t.closed = nil, true
	t.mu.Unlock()
	if c != nil {
		c.shut(ErrClosed)
		<-c.readerDone
	}
}

func (t *Stdio) connect(ctx context.Context) (*stdioConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if t.conn != nil && !t.conn.isDone() {
		return t.conn, nil
	}
	if t.conn != nil {
		<-t.conn.readerDone
	}
	r, w, err := t.Dial(ctx)
	if err != nil {
		return nil, dropped(err)
	}
	max := t.MaxMessageBytes
	if max <= 0 {
		max = defaultMaxMessageBytes
	}
	c := &stdioConn{r: r, w: w, max: max, listens: map[string]*stdioMessages{}, readerDone: make(chan struct{})}
	t.conn = c
	go c.read() // ends when r ends; shut closes r
	return c, nil
}

// stdioConn is one connection to a stdio upstream.
type stdioConn struct {
	r   io.ReadCloser
	w   io.WriteCloser
	max int

	wmu sync.Mutex // one write at a time

	mu         sync.Mutex
	listens    map[string]*stdioMessages // by id (raw)
	err        error                     // set once the connection ended
	readerDone chan struct{}
	closeOnce  sync.Once
}

func (c *stdioConn) isDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

func (c *stdioConn) add(m *stdioMessages) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.listens[m.id.Raw()] = m
	return nil
}

func (c *stdioConn) remove(m *stdioMessages) {
	c.mu.Lock()
	if c.listens[m.id.Raw()] == m {
		delete(c.listens, m.id.Raw())
	}
	c.mu.Unlock()
}

// write writes one message and its newline, bounded in time when the
// pipe takes deadlines.
func (c *stdioConn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(time.Now().Add(stdioWriteTimeout))
	}
	line := append(bytes.Clone(msg), '\n')
	if _, err := c.w.Write(line); err != nil {
		c.shut(dropped(err))
		return dropped(err)
	}
	return nil
}

// shut ends the connection: every listen on it ends with err.
func (c *stdioConn) shut(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	ls := c.listens
	c.listens = map[string]*stdioMessages{}
	c.mu.Unlock()
	for _, m := range ls {
		m.fail(err)
	}
	c.closeOnce.Do(func() {
		c.w.Close()
		c.r.Close()
	})
}

// read routes every line to its listen until the output ends.
func (c *stdioConn) read() {
	defer close(c.readerDone)
	rd := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, err := readLine(rd, c.max)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				c.shut(err)
				return
			}
			c.shut(dropped(err))
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		key, ok := routeKey(line)
		if !ok {
			continue // not a message of a listen: another request's, a log line
		}
		c.mu.Lock()
		m := c.listens[key]
		c.mu.Unlock()
		if m != nil {
			m.push(line)
		}
	}
}

// readLine reads one line of at most max bytes (its newline excluded).
func readLine(rd *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errTooLarge
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
	}
}

// routeKey is the raw id of the listen a message belongs to: a response's
// id, a notification's _meta subscription id, or the requestId of a
// notifications/cancelled.
func routeKey(line []byte) (string, bool) {
	var w struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta      map[string]json.RawMessage `json:"_meta"`
			RequestID json.RawMessage            `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &w) != nil {
		return "", false
	}
	raw := w.Params.Meta[spec.MetaSubscriptionID]
	switch {
	case w.Method == "" && w.ID != nil:
		raw = w.ID
	case w.Method == spec.MethodCancelled:
		raw = w.Params.RequestID
	case w.ID != nil:
		return "", false // a request of the upstream's
	}
	id, ok := jsonrpc.ParseID(raw)
	if !ok {
		return "", false
	}
	return id.Raw(), true
}

// stdioMessages are one listen's messages on a stdio connection.
type stdioMessages struct {
	c  *stdioConn
	id jsonrpc.ID
	ch chan []byte // written by the reader only while the listen is in the map

	mu     sync.Mutex
	err    error // the end, once known
	done   chan struct{}
	closed bool
}

// push queues a line; a full queue ends the listen as fallen behind, and
// cancels it upstream.
func (m *stdioMessages) push(line []byte) {
	select {
	case m.ch <- line:
	default:
		m.c.remove(m)
		m.fail(fmt.Errorf("%w: the listen's reader fell behind", ErrDropped))
		m.cancelUpstream()
	}
}

// cancelUpstream sends notifications/cancelled for the listen.
func (m *stdioMessages) cancelUpstream() {
	cancel, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "method": spec.MethodCancelled,
		"params": map[string]any{"requestId": m.id, "reason": "listen closed"},
	})
	_ = m.c.write(cancel)
}

func (m *stdioMessages) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = err
		close(m.done)
	}
}

// Next implements messages: what was queued comes first, then the end.
func (m *stdioMessages) Next() ([]byte, error) {
	select {
	case line := <-m.ch:
		return line, nil
	default:
	}
	select {
	case line := <-m.ch:
		return line, nil
	case <-m.done:
		m.mu.Lock()
		err, closed := m.err, m.closed
		m.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select { // queued before the end
		case line := <-m.ch:
			return line, nil
		default:
		}
		return nil, err
	}
}

// Close implements messages: the upstream is sent notifications/cancelled
// (unless the connection is gone).
func (m *stdioMessages) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	live := m.err == nil
	if live {
		m.err = ErrClosed
		close(m.done)
	}
	m.mu.Unlock()
	m.c.remove(m)
	if live {
		m.cancelUpstream()
	}
}
