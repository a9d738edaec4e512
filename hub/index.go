package hub

// This file holds the hub's selection index: sets of listeners with O(1)
// insertion and O(1) removal (swap-delete), and the memberships that let a
// listener find and leave every set it joined.
//
// Every set and every listener's memberships are guarded by Hub.mu: read
// under its read lock (Publish collecting targets), written under its write
// lock (Open, Close, Complete).

// member is one listener's entry in a set. slot is the index of the matching
// membership in the listener's memb slice, so that a swap-delete can update
// the moved listener's recorded position in O(1).
type member struct {
	l    *listener
	slot int32
}

// membership records that a listener sits at position pos of set s.
type membership struct {
	s   *set
	pos int32
}

// set is an unordered set of listeners. A set that lives in one of the hub's
// maps (a URI or a filter key) knows its key and its map, so that it can
// remove itself once empty.
type set struct {
	items []member
	key   string
	home  map[string]*set
	// first backs items while the set has one member: most URIs are watched
	// by one listener, and this saves an allocation and, on Publish, a
	// dependent memory load.
	first [1]member
}

// newSet returns an empty set that lives in home under key.
func newSet(home map[string]*set, key string) *set {
	s := &set{key: key, home: home}
	s.items = s.first[:0]
	return s
}

// join adds l to s and records the membership in l.
func (l *listener) join(s *set) {
	slot := int32(len(l.memb))
	l.memb = append(l.memb, membership{s: s, pos: int32(len(s.items))})
	s.items = append(s.items, member{l: l, slot: slot})
}

// joinOnce is join, unless l is already s's last member: the sets of a new
// listener's URIs are joined in a row under Hub.mu, so a URI its list names
// twice finds l at the end of its set and is joined once.
func (l *listener) joinOnce(s *set) {
	if n := len(s.items); n > 0 && s.items[n-1].l == l {
		return
	}
	l.join(s)
}

// remove deletes the member at pos by moving the last member into its place.
// An emptied set leaves its home map; a set much larger than its content
// shrinks, so that a mass close gives memory back.
func (s *set) remove(pos int32) {
	last := len(s.items) - 1
	if int(pos) != last {
		moved := s.items[last]
		s.items[pos] = moved
		moved.l.memb[moved.slot].pos = pos
	}
	s.items[last] = member{}
	s.items = s.items[:last]
	switch {
	case last == 0 && s.home != nil:
		delete(s.home, s.key)
	case cap(s.items) > 64 && last < cap(s.items)/4:
		s.items = append(make([]member, 0, 2*last), s.items...)
	}
}

// leave removes l from every set it joined, starting at membership from.
func (l *listener) leave(from int) {
	for i := len(l.memb) - 1; i >= from; i-- {
		m := l.memb[i]
		m.s.remove(m.pos)
		l.memb[i] = membership{}
	}
	l.memb = l.memb[:from]
}

// setIn returns the set of key in m, creating it when absent.
func setIn(m map[string]*set, key string) *set {
	s, ok := m[key]
	if !ok {
		s = newSet(m, key)
		m[key] = s
	}
	return s
}
