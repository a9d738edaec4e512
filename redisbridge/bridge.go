package redisbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
)

const (
	// Entry fields: the envelope and its signature.
	fieldData = "d"
	fieldSig  = "s"
	// readCount is the most entries one XREAD returns.
	readCount = 256
	// readBlock is how long one XREAD waits for entries; a broken
	// connection that sends nothing is noticed within it plus go-redis's
	// 10 s margin.
	readBlock = 5 * time.Second
	// batchMessages and batchBytes bound one pipeline of XADDs.
	batchMessages = 256
	batchBytes    = 1 << 20
	// minBackoff and maxBackoff bound the wait between two attempts to
	// reach Redis again.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
	// startTimeout bounds New's first contact with Redis.
	startTimeout = 5 * time.Second
	// drainTimeout bounds Close's wait for the outbox to be written.
	drainTimeout = 2 * time.Second
)

// Bridge joins a local hub.Hub to a Redis stream shared by every instance
// of one MCP server: every event published on the hub is appended to the
// stream, and the events other instances append there are delivered to the
// hub's listeners. See the package documentation.
//
// All methods are safe for concurrent use.
type Bridge struct {
	node   *cluster.Node
	opts   Options       // resolved: defaults applied
	reader *redis.Client // one connection: the reader goroutine's XREADs
	writer *redis.Client // one connection: the writer goroutine's XADDs

	// The outbox: messages handed over by the node, in sequence order,
	// waiting for the writer goroutine.
	outMu    sync.Mutex
	outbox   []cluster.Message
	outBytes int
	wake     chan struct{} // signals the writer (capacity 1)

	ctx     context.Context // ends when Close begins
	cancel  context.CancelFunc
	drain   chan struct{} // closed by Close: the writer writes what is queued, then ends
	wrDone  chan struct{}
	rdDone  chan struct{}
	lastID  string // reader goroutine only: the last entry read
	reconns atomic.Uint64

	closeOnce sync.Once
}

// Connect parses url (redis://[user:password@]host:port[/db], or rediss://
// for TLS: redis.ParseURL) and joins h to the stream like New.
func Connect(url string, h *hub.Hub, opts Options) (*Bridge, error) {
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisbridge: %w", err)
	}
	return New(ro, h, opts)
}

// New joins h to the stream Options.Stream on the Redis server ro names,
// and returns the running bridge. It opens two connections of its own with
// ro (its address, credentials, TLS and dialer; with one connection each
// and no retries of go-redis's: the bridge repairs losses itself, and a
// retried write could add an entry twice), reads the stream's last entry
// id (so that whatever is appended after New returns reaches h), joins the
// hub as its relay (hub.Hub.Join: from now on every Publish on h is also
// appended to the stream) and starts its reader and writer goroutines.
//
// New fails with an error matching cluster.ErrInvalidOptions for invalid
// opts or a nil ro or h, with hub.ErrRelayJoined when another bridge has
// joined h, and with go-redis's error when Redis cannot be reached or
// refuses the bridge's first command (within 5 s).
func New(ro *redis.Options, h *hub.Hub, opts Options) (*Bridge, error) {
	if ro == nil || h == nil {
		return nil, fmt.Errorf("%w: New needs Redis options and a hub", cluster.ErrInvalidOptions)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	conn := func() *redis.Client {
		c := *ro
		c.PoolSize, c.MinIdleConns, c.MaxIdleConns, c.MaxActiveConns = 1, 0, 1, 1
		c.MaxRetries = -1
		c.ContextTimeoutEnabled = true // Close's cancellation ends a blocked read
		if c.ClientName == "" {
			c.ClientName = "mcplisten-redisbridge"
		}
		return redis.NewClient(&c)
	}
	b := &Bridge{
		opts:   o,
		reader: conn(),
		writer: conn(),
		wake:   make(chan struct{}, 1),
		drain:  make(chan struct{}),
		wrDone: make(chan struct{}),
		rdDone: make(chan struct{}),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	fail := func(err error) (*Bridge, error) {
		b.cancel()
		_ = b.reader.Close()
		_ = b.writer.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, startTimeout)
	defer cancel()
	last, err := b.position(ctx)
	if err != nil {
		return fail(fmt.Errorf("redisbridge: reading stream %s: %w", o.Stream, err))
	}
	if err := b.writer.Ping(ctx).Err(); err != nil {
		return fail(fmt.Errorf("redisbridge: %w", err))
	}
	b.lastID = last
	b.node, err = cluster.NewNode(h, cluster.Transport{Scope: o.Stream, Send: b.enqueue}, o.Options)
	if err != nil {
		return fail(err)
	}
	go b.write()
	go b.read()
	return b, nil
}

// position returns the stream's last generated id, "0-0" when there is no
// stream.
func (b *Bridge) position(ctx context.Context) (string, error) {
	info, err := b.reader.XInfoStream(ctx, b.opts.Stream).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return "0-0", nil
		}
		return "", err
	}
	return info.LastGeneratedID, nil
}

// isNoSuchKey reports Redis's answer to XINFO STREAM on a missing key.
func isNoSuchKey(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "no such key")
}

// ID returns the bridge's random instance id, the origin of its envelopes.
func (b *Bridge) ID() string { return b.node.ID() }

// Stream returns the key of the stream the bridge appends to and reads.
func (b *Bridge) Stream() string { return b.opts.Stream }

// Hub returns the bridge's local hub.
func (b *Bridge) Hub() *hub.Hub { return b.node.Hub() }

// Resync resynchronises the local listeners now, in the calling goroutine
// (see cluster.Node.Resync). It fails only after Close
// (cluster.ErrClosed).
func (b *Bridge) Resync() error { return b.node.Resync() }

// Stats returns the bridge's counters (see cluster.Stats).
func (b *Bridge) Stats() cluster.Stats { return b.node.Stats() }

// enqueue is the node's Send: it queues a copy of m for the writer, or
// refuses it when the outbox is full.
func (b *Bridge) enqueue(m cluster.Message) error {
	b.outMu.Lock()
	if b.outBytes+len(m.Data) > b.opts.OutboxBytes {
		b.outMu.Unlock()
		return fmt.Errorf("redisbridge: outbox full (%d bytes waiting for Redis)", b.outBytes)
	}
	m.Data = append([]byte(nil), m.Data...)
	b.outbox = append(b.outbox, m)
	b.outBytes += len(m.Data)
	b.outMu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

// take removes up to one pipeline's worth of messages from the outbox.
func (b *Bridge) take() []cluster.Message {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	n, size := 0, 0
	for n < len(b.outbox) && n < batchMessages && (n == 0 || size+len(b.outbox[n].Data) <= batchBytes) {
		size += len(b.outbox[n].Data)
		n++
	}
	batch := append([]cluster.Message(nil), b.outbox[:n]...)
	clear(b.outbox[:n])
	b.outbox = b.outbox[n:]
	if len(b.outbox) == 0 {
		b.outbox = nil // let a burst's backing array go
	}
	b.outBytes -= size
	return batch
}

// write is the writer goroutine: it appends the outbox to the stream, a
// pipeline of XADDs at a time, in order. When the connection breaks under
// a batch it counts the batch as lost (it may have been appended in part:
// it is not sent again, so nothing is ever appended twice); when Redis
// cannot be reached it keeps the batch. Either way it waits until Redis
// answers again while the outbox fills, and then sends a sync message, so
// that the other instances see any gap. It ends when Close has begun and
// the outbox is empty, or when Close gives up waiting for Redis.
func (b *Bridge) write() {
	defer close(b.wrDone)
	down := false
	backoff := minBackoff
	for {
		batch := b.take()
		if len(batch) == 0 {
			select {
			case <-b.wake:
				continue
			case <-b.drain:
				if b.pending() == 0 {
					return
				}
				continue
			}
		}
		if down {
			// Wait for Redis before spending the batch.
			for b.writer.Ping(b.ctx).Err() != nil {
				if !b.sleep(&backoff) {
					b.node.SendFailed(len(batch) + b.discard())
					return
				}
			}
		}
		err := b.append(batch)
		switch {
		case err == nil && down:
			down, backoff = false, minBackoff
			b.node.SendSync()
		case err != nil && b.ctx.Err() != nil:
			b.node.SendFailed(b.discard())
			return
		case err != nil:
			down = true
		}
	}
}

// append writes batch as one pipeline and counts the messages Redis did
// not take. It returns an error when the connection failed. When the
// connection could not even be made, nothing was sent: the batch goes back
// to the front of the outbox, to be sent once Redis answers.
func (b *Bridge) append(batch []cluster.Message) error {
	pipe := b.writer.Pipeline()
	for _, m := range batch {
		values := []any{fieldData, m.Data}
		if m.Sig != "" {
			values = append(values, fieldSig, m.Sig)
		}
		pipe.XAdd(b.ctx, &redis.XAddArgs{
			Stream: b.opts.Stream, MaxLen: b.opts.StreamLength, Approx: true, Values: values,
		})
	}
	_, err := pipe.Exec(b.ctx)
	if err == nil {
		return nil
	}
	if isDialError(err) {
		b.requeue(batch)
		return err
	}
	// Commands Redis refused (an ACL without XADD, a wrong type) are lost;
	// after a broken connection, so is the whole batch: some of it may
	// have been appended, and sending it again could append it twice.
	failed := 0
	var netErr error
	for _, c := range pipe.Cmds() {
		if e := c.Err(); e != nil {
			failed++
			var re redis.Error
			if !errors.As(e, &re) {
				netErr = e
			}
		}
	}
	if netErr != nil {
		failed = len(batch)
	}
	b.node.SendFailed(failed)
	return netErr
}

// isDialError reports whether err is a failure to connect: nothing was
// sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// requeue puts batch back at the front of the outbox.
func (b *Bridge) requeue(batch []cluster.Message) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	size := 0
	for _, m := range batch {
		size += len(m.Data)
	}
	b.outbox = append(batch, b.outbox...)
	b.outBytes += size
}

// pending returns the number of queued messages.
func (b *Bridge) pending() int {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	return len(b.outbox)
}

// discard empties the outbox and returns how many messages it held.
func (b *Bridge) discard() int {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	n := len(b.outbox)
	b.outbox, b.outBytes = nil, 0
	return n
}

// sleep waits *backoff (then doubles it, up to maxBackoff); false when
// Close began meanwhile.
func (b *Bridge) sleep(backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(2**backoff, maxBackoff)
	select {
	case <-t.C:
		return true
	case <-b.ctx.Done():
		return false
	}
}

// read is the reader goroutine: it reads the stream from the last entry it
// saw, a batch at a time, and hands each entry to the node, in stream
// order. When Redis fails it reports the disconnection and tries again;
// once Redis answers it checks whether the stream still holds every entry
// after the last one read: then it simply goes on reading (nothing was
// lost), else (Redis restarted without them, or trimmed them) it tells
// the node, which resynchronises the listeners. It ends when Close begins.
func (b *Bridge) read() {
	defer close(b.rdDone)
	backoff := minBackoff
	down := false
	for b.ctx.Err() == nil {
		if down {
			if !b.reconnect() {
				if !b.sleep(&backoff) {
					return
				}
				continue
			}
			down, backoff = false, minBackoff
		}
		res, err := b.reader.XRead(b.ctx, &redis.XReadArgs{
			Streams: []string{b.opts.Stream, b.lastID}, Count: readCount, Block: readBlock,
		}).Result()
		switch {
		case b.ctx.Err() != nil:
			return
		case errors.Is(err, redis.Nil): // nothing new within readBlock
			continue
		case err != nil:
			down = true
			b.node.Connection(cluster.ConnectionInfo{Status: cluster.Disconnected, Reconnects: b.reconns.Load(), Err: err})
			continue
		}
		for _, s := range res {
			for _, e := range s.Messages {
				b.lastID = e.ID
				data, _ := e.Values[fieldData].(string)
				sig, _ := e.Values[fieldSig].(string)
				b.node.Receive(cluster.Message{Data: []byte(data), Sig: sig})
			}
		}
	}
}

// reconnect checks whether Redis answers again and, if it does, whether
// the stream still holds every entry after lastID: it does when it still
// holds lastID itself (Redis trims the oldest entries first, and a new
// stream, after a restart without persistence, has none of the old ones).
// Otherwise it tells the node, which resynchronises the listeners. It
// returns false while Redis does not answer.
func (b *Bridge) reconnect() bool {
	last, err := b.position(b.ctx)
	if err != nil {
		return false
	}
	kept := false
	if b.lastID != "0-0" {
		es, err := b.reader.XRangeN(b.ctx, b.opts.Stream, b.lastID, b.lastID, 1).Result()
		if err != nil {
			return false
		}
		kept = len(es) == 1
	}
	n := b.reconns.Add(1)
	b.node.Connection(cluster.ConnectionInfo{Status: cluster.Connected, Reconnects: n})
	if kept {
		return true // nothing was lost: read on from lastID
	}
	// Entries after lastID may be gone (a restart lost them, or they were
	// trimmed). Read on from lastID (the ids of the entries appended since
	// a restart are later), or from the stream's end if Redis came back
	// with an older copy of it, and resynchronise.
	if compareIDs(last, b.lastID) < 0 {
		b.lastID = last
	}
	b.node.Reconnected()
	return true
}

// compareIDs compares two stream entry ids ("ms-seq"); a malformed id
// counts as 0-0.
func compareIDs(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return cmp.Or(cmp.Compare(am, bm), cmp.Compare(as, bs))
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}

// Close stops the bridge: it leaves the hub (later publications stay
// local), waits up to 2 s for the writer to append what is queued (what is
// left is counted in Stats.PublishErrors), stops the reader, waits for
// both goroutines and closes the bridge's connections. It does not touch
// the hub's listeners. Resync fails with cluster.ErrClosed afterwards.
// Close is idempotent. Do not call it from a hook.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.node.Close()
		close(b.drain)
		select {
		case <-b.wrDone:
		case <-time.After(drainTimeout):
		}
		b.cancel()
		// Closing the connections ends a read or write in flight at once.
		_ = b.reader.Close()
		_ = b.writer.Close()
		<-b.wrDone
		<-b.rdDone
	})
	return nil
}
