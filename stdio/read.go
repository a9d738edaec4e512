package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/mcplisten/listen/jsonrpc"
)

// readBufferSize is the size of the reader's buffer; lines longer than it are
// assembled in lineReader.buf, up to the line limit.
const readBufferSize = 64 << 10

// lineReader splits its input into lines of at most max bytes (newline
// excluded), never holding more than max bytes of an over-long line.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	err error // a read error seen after a final partial line
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := readBufferSize
	if max < size {
		size = max + 1
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next line without its '\n' (valid until the next call), or
// tooLong for a line longer than max (skipped up to its newline). A last line
// without a newline before EOF is returned too. err is set only when there
// is no line: io.EOF at the end, or the read error (a partial line before a
// read error other than EOF is dropped).
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	if lr.err != nil {
		return nil, false, lr.err
	}
	if cap(lr.buf) > readBufferSize {
		lr.buf = nil // do not keep a large line's buffer for the connection's life
	}
	lr.buf = lr.buf[:0]
	over := false
	for {
		frag, err := lr.br.ReadSlice('\n')
		complete := err == nil
		content := frag
		if complete {
			content = frag[:len(frag)-1]
		}
		if !over {
			switch {
			case len(lr.buf)+len(content) > lr.max:
				over = true
				lr.buf = lr.buf[:0]
			case complete && len(lr.buf) == 0:
				return content, false, nil
			default:
				lr.buf = append(lr.buf, content...)
			}
		}
		if complete {
			return lr.buf, over, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		// EOF or a read error.
		if !errors.Is(err, io.EOF) || (len(lr.buf) == 0 && !over) {
			return nil, false, err
		}
		lr.err = err
		return lr.buf, over, nil
	}
}

// readLoop is the reader goroutine: it reads and handles messages until the
// input ends or the connection stops taking messages. Handling a line may
// wait (for a unit of MaxInFlight, for room in the peer's queue, for an
// error response to be written): the reading waits with it, which is the
// connection's backpressure.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	if c.inbound != nil {
		defer close(c.inbound)
	}
	lr := newLineReader(c.r, c.srv.opts.MaxLineBytes)
	for {
		line, tooLong, err := lr.next()
		if err != nil {
			c.inputDone(err)
			return
		}
		if !c.acquire() {
			return // drained or killed meanwhile: the line is not taken
		}
		switch {
		case tooLong:
			c.srv.log.Debug("stdio: over-long line skipped", "limit", c.srv.opts.MaxLineBytes)
			c.reply(jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgLineTooLong))
		case len(bytes.TrimSpace(line)) == 0:
			// Blank lines are not messages: skip them silently.
		default:
			c.handleLine(line)
		}
		c.release()
	}
}
