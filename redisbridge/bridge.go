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
	// readCount is the most entries one read returns.
	readCount = 256
	// maxSigBytes is the largest field "s" the reader fetches: a
	// signature has cluster.SignatureLen bytes; an entry with a longer
	// one is skipped unread, as too large.
	maxSigBytes = 256
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
	hub    *hub.Hub
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
// hub as its relay (from now on every Publish on h is also
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
		hub:    h,
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
	last, _, err := b.state(ctx, "")
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

// ID returns the bridge's random instance id, the origin of its envelopes
// (cluster.ReceiveInfo.Origin at the other instances). A new bridge has a
// new one.
func (b *Bridge) ID() string { return b.node.ID() }

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
// saw and hands each entry to the node, in stream order. It fetches what
// is there with readScript, at most Options.ReadBytes of envelopes at a
// time, skipping unread (as too large) the entries above
// MaxMessageBytes; once it has caught up it waits for the next entry with
// a blocking XREAD of one entry. When Redis fails it reports the
// disconnection and tries again; once Redis answers it checks whether the
// stream still holds every entry after the last one read: then it simply
// goes on reading (nothing was lost), else (Redis restarted without them,
// or trimmed them) it tells the node, which resynchronises the listeners.
// It ends when Close begins.
func (b *Bridge) read() {
	defer close(b.rdDone)
	backoff := minBackoff
	down, caughtUp := false, false
	for b.ctx.Err() == nil {
		if down {
			if !b.reconnect() {
				if !b.sleep(&backoff) {
					return
				}
				continue
			}
			down, caughtUp, backoff = false, false, minBackoff
		}
		var err error
		if caughtUp {
			caughtUp, err = b.wait()
		} else {
			caughtUp, err = b.fetch()
		}
		switch {
		case b.ctx.Err() != nil:
			return
		case err != nil:
			down = true
			b.node.Connection(cluster.ConnectionInfo{Status: "disconnected", Reconnects: b.reconns.Load(), Err: err})
		}
	}
}

// readScript returns the entries after ARGV[1] (an entry id) of the
// stream KEYS[1], in order: at most ARGV[2] entries, and no more of their
// fields "d" and "s" than ARGV[3] bytes (but at least one entry). It
// returns {id, d, s} for an entry whose "d" has at most ARGV[4] bytes and
// "s" at most ARGV[5] (a missing field is empty; other fields are left
// out), and {id, size} (the bytes of "d" and "s") for a larger one, which
// is skipped. It takes the entries from the stream one at a time, so that
// Redis holds no more than one of them at once for it.
//
// The id after ms-seq is ms-(seq+1), or (ms+1)-0 when seq is the largest
// (2^64-1); the script computes it in decimal, as Lua's numbers would
// round such ids (Redis 6.2's exclusive ranges would spare it that, at
// the cost of Redis 5 and 6.0).
var readScript = redis.NewScript(`
local function succ(s)
  local i = #s
  while i > 0 and s:byte(i) == 57 do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #s) end
  return s:sub(1, i - 1) .. string.char(s:byte(i) + 1) .. string.rep('0', #s - i)
end
local top = '18446744073709551615'
local last = ARGV[1]
local count, budget = tonumber(ARGV[2]), tonumber(ARGV[3])
local maxd, maxs = tonumber(ARGV[4]), tonumber(ARGV[5])
local out, used = {}, 0
while #out < count do
  local ms, seq = string.match(last, '^(%d+)-(%d+)$')
  if not ms or (ms == top and seq == top) then break end
  local from
  if seq == top then from = succ(ms) .. '-0' else from = ms .. '-' .. succ(seq) end
  local e = redis.call('XRANGE', KEYS[1], from, '+', 'COUNT', 1)[1]
  if not e then break end
  local d, s, f = '', '', e[2]
  for i = 1, #f, 2 do
    if f[i] == 'd' then d = f[i + 1] elseif f[i] == 's' then s = f[i + 1] end
  end
  if #d > maxd or #s > maxs then
    out[#out + 1] = {e[1], #d + #s}
  else
    if #out > 0 and used + #d + #s > budget then break end
    used = used + #d + #s
    out[#out + 1] = {e[1], d, s}
  end
  last = e[1]
end
return out
`)

// fetch reads the entries after lastID with readScript and hands them to
// the node. caughtUp reports that the stream holds no more of them.
func (b *Bridge) fetch() (caughtUp bool, err error) {
	res, err := readScript.Run(b.ctx, b.reader, []string{b.opts.Stream},
		b.lastID, readCount, b.opts.ReadBytes, b.opts.MaxMessageBytes, maxSigBytes).Slice()
	if err != nil {
		return false, err
	}
	for _, r := range res {
		e, _ := r.([]any)
		if len(e) == 0 {
			return false, fmt.Errorf("redisbridge: the read script answered %T", r)
		}
		id, _ := e[0].(string)
		if len(e) == 2 { // skipped: larger than the limits
			size, _ := e[1].(int64)
			b.lastID = id
			b.node.Dropped(cluster.DropInfo{Reason: "too_large", Count: 1, Bytes: int(size)})
			continue
		}
		data, _ := e[1].(string)
		sig, _ := e[2].(string)
		b.lastID = id
		b.node.Receive(cluster.Message{Data: []byte(data), Sig: sig})
	}
	return len(res) == 0, nil
}

// wait blocks (XREAD, up to readBlock) until the stream holds an entry
// after lastID and hands that one entry to the node; the next ones are
// fetched. This one is read whole, whatever its size: Redis offers no
// blocking read of less than whole entries.
func (b *Bridge) wait() (caughtUp bool, err error) {
	res, err := b.reader.XRead(b.ctx, &redis.XReadArgs{
		Streams: []string{b.opts.Stream, b.lastID}, Count: 1, Block: readBlock,
	}).Result()
	switch {
	case errors.Is(err, redis.Nil): // nothing new within readBlock
		return true, nil
	case err != nil:
		return false, err
	}
	for _, s := range res {
		for _, e := range s.Messages {
			b.lastID = e.ID
			data, _ := e.Values[fieldData].(string)
			sig, _ := e.Values[fieldSig].(string)
			b.node.Receive(cluster.Message{Data: []byte(data), Sig: sig})
		}
	}
	return false, nil
}

// stateScript returns the last generated id of the stream KEYS[1] ("0-0"
// when there is no stream) and whether the stream holds the entry ARGV[1]
// (1 or 0; 0 when ARGV[1] is empty), without sending any entry: XINFO
// STREAM and XRANGE would send the entries they name whole.
var stateScript = redis.NewScript(`
local info = redis.pcall('XINFO', 'STREAM', KEYS[1])
if info.err then
  if string.find(info.err, 'no such key', 1, true) then return {'0-0', 0} end
  return info
end
local last = '0-0'
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then last = info[i + 1] end
end
local kept = 0
if ARGV[1] ~= '' then kept = #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1], 'COUNT', 1) end
return {last, kept}
`)

// state runs stateScript: the stream's last generated id ("0-0" when
// there is no stream), and whether it still holds the entry id ("" for
// none).
func (b *Bridge) state(ctx context.Context, id string) (last string, kept bool, err error) {
	res, err := stateScript.Run(ctx, b.reader, []string{b.opts.Stream}, id).Slice()
	if err != nil {
		return "", false, err
	}
	if len(res) != 2 {
		return "", false, fmt.Errorf("redisbridge: the state script answered %d values", len(res))
	}
	last, _ = res[0].(string)
	n, _ := res[1].(int64)
	return last, n == 1, nil
}

// reconnect checks whether Redis answers again and, if it does, whether
// the stream still holds every entry after lastID: it does when it still
// holds lastID itself (Redis trims the oldest entries first, and a new
// stream, after a restart without persistence, has none of the old ones).
// Otherwise it tells the node, which resynchronises the listeners. It
// returns false while Redis does not answer.
func (b *Bridge) reconnect() bool {
	id := b.lastID
	if id == "0-0" {
		id = ""
	}
	last, kept, err := b.state(b.ctx, id)
	if err != nil {
		return false
	}
	n := b.reconns.Add(1)
	b.node.Connection(cluster.ConnectionInfo{Status: "connected", Reconnects: n})
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
