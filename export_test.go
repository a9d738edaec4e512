package listen

import (
	"context"

	"github.com/mcplisten/listen/spec"
)

// Unexported helpers that the external tests exercise directly.
var (
	ValidateNotifications = validateNotifications
	Merge                 = merge
	Project               = project
	AbsoluteURI           = isAbsoluteURI
	SubsetOf              = Filter.subsetOf
	FilterValid           = Filter.valid
	Allows                = Capabilities.allows
	KindOf                = kindOf
	Clone                 = Filter.clone
	WrapStream            = wrapStream
	Strings               = Filter.strings
)

// AppendNotification is Notification appending to dst, for benchmarks.
func (s *Subscription) AppendNotification(dst []byte, ev Event) ([]byte, bool, error) {
	return s.appendNotification(context.Background(), dst, ev, false)
}

// StreamHooks are wrapStream's hooks.
type StreamHooks = streamHooks

// ErrWorkerRunning is StartWorker's error while a worker runs.
var ErrWorkerRunning = errWorkerRunning

type CollisionError = collisionError

type EventError = eventError

type DisconnectedError = disconnectedError

type FailedError = failedError

// Exact event validation messages.
const (
	MsgEventParams        = msgEventParams
	MsgEventMetadata      = msgEventMetadata
	MsgEventAbsoluteURI   = msgEventAbsoluteURI
	MsgEventListURI       = msgEventListURI
	MsgEventCoreExtFields = msgEventCoreExtFields
	MsgEventExtID         = msgEventExtID
	MsgEventExtSelector   = msgEventExtSelector
	MsgEventExtCoreFields = msgEventExtCoreFields
	MsgEventInvalid       = msgEventInvalid
)

// StaleReads makes the delivery verdicts s cached stale, as a re-check of
// its principal does (for the benchmark of an uncached delivery check).
func StaleReads(s *Subscription) {
	if s.life != nil && s.life.p != nil {
		s.life.p.gen.Add(1)
	}
}

// Listens returns the number of open streams a tracks.
func Listens(a *Access) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// SettingsClone is a deep copy of s as a Filter (nil for empty settings).
func SettingsClone(s Settings) Filter {
	if len(s.f) == 0 {
		return nil
	}
	return s.f.clone()
}

// Accepted is the accepted filter, as the acknowledgement echoes it (a new
// map on each call).
func (s *Subscription) Accepted() Filter {
	f := make(Filter, 4)
	for k := range kinds {
		if s.lists&(1<<k) != 0 {
			f[kinds[k].key] = true
		}
	}
	if w := s.watch; w != nil {
		list := make([]any, len(w.list))
		for i, u := range w.list {
			list[i] = u
		}
		f[spec.KeyResourceSubscriptions] = list
	}
	if s.ext != nil {
		for _, p := range s.ext.filters {
			for k, v := range p {
				f[k] = v
			}
		}
	}
	return f
}

// SettingsJSON encodes s as a JSON object with sorted keys.
func SettingsJSON(s Settings) ([]byte, error) { return s.f.MarshalJSON() }
