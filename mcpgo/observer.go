package mcpgo

import (
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// observerQueue is the capacity of an observer's queue: the notifications
// mcp-go handed it that its goroutine has not republished yet. A broadcast
// finding it full waits for room (see observer).
const observerQueue = 1024

// observer is the Bridge's session of the mcp-go server: a server.ClientSession
// registered with RegisterSession, initialized from the start, so that
// mcp-go hands it every broadcast (SendNotificationToAllClients, and the list
// changes of Add*, Set* and Delete*), unfiltered: it does not implement
// SessionWithSubscriptionFilter.
//
// mcp-go hands a session a notification with a non-blocking send on the
// channel NotificationChannel returns, and drops it if the channel is full.
// The observer never lets that happen: NotificationChannel is called just
// before each send, on the sending goroutine, so it first takes one of
// observerQueue slots (waiting if all are taken) and only then returns the
// channel, whose buffer has room for every slot taken; the observer's
// goroutine gives a slot back for each notification it takes. A burst
// thus waits in AddTool or SendNotificationToAllClients instead of being
// dropped. The goroutine is started by start and ends with stop, which
// waits for it (what is still queued is dropped); after stop,
// NotificationChannel returns a fresh channel each time.
type observer struct {
	id     string
	ch     chan mcp.JSONRPCNotification
	slots  chan struct{}
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
	handle func(mcp.JSONRPCNotification)

	// taken counts the slots NotificationChannel handed out, handled the
	// notifications republished (under mu; flush waits on cond).
	mu             sync.Mutex
	cond           *sync.Cond
	taken, handled uint64
}

func newObserver(id string, capacity int, handle func(mcp.JSONRPCNotification)) *observer {
	o := &observer{
		id:     id,
		ch:     make(chan mcp.JSONRPCNotification, capacity),
		slots:  make(chan struct{}, capacity),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		handle: handle,
	}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// start runs the goroutine that republishes what mcp-go queued; stop ends it.
func (o *observer) start() {
	go func() {
		defer close(o.exited)
		for {
			select {
			case n := <-o.ch:
				<-o.slots
				o.handle(n)
				o.mu.Lock()
				o.handled++
				o.cond.Broadcast()
				o.mu.Unlock()
			case <-o.done:
				return
			}
		}
	}()
}

// stop ends the goroutine and waits for it. It is idempotent.
func (o *observer) stop() {
	o.once.Do(func() {
		close(o.done)
		o.mu.Lock()
		o.cond.Broadcast() // releases a flush: nothing more is handled
		o.mu.Unlock()
	})
	<-o.exited
}

// flush returns once every notification mcp-go was handed a channel for
// before the call has been republished (or the observer was stopped).
func (o *observer) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	target := o.taken
	for o.handled < target {
		select {
		case <-o.done:
			return
		default:
		}
		o.cond.Wait()
	}
}

// Initialize implements server.ClientSession.
func (o *observer) Initialize() {}

// Initialized implements server.ClientSession: always true, so that mcp-go
// broadcasts to it.
func (o *observer) Initialized() bool { return true }

// SessionID implements server.ClientSession.
func (o *observer) SessionID() string { return o.id }

// NotificationChannel implements server.ClientSession: see observer.
func (o *observer) NotificationChannel() chan<- mcp.JSONRPCNotification {
	select {
	case o.slots <- struct{}{}:
		o.mu.Lock()
		o.taken++
		o.mu.Unlock()
		return o.ch
	case <-o.done:
		return make(chan mcp.JSONRPCNotification, 1)
	}
}
