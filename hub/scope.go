package hub

import (
	"encoding/binary"
	"slices"

	"github.com/mcplisten/listen"
)

// This file holds the scoped index: a publication with a Scope
// (listen.Event.Scope, a principal or a tenant) reaches only the listeners
// whose request named that scope (listen.Request.Scopes, set by
// listen.Open from listen.Options.Scopes).
//
// A listener with scopes is indexed twice: as every listener (the
// unscoped publications reach it, as before), and once more per scope,
// under keys that carry the scope. A scoped publication looks up only the
// scoped keys, so it costs what its matching listeners cost, whatever the
// number of listeners of other scopes. The scoped keys of the list changes,
// the URIs and the filter keys live in Hub.scoped; those of the folder
// listeners in their folder index, next to the unscoped ones. A scoped key
// is
//
//	"\x00" uvarint(len(scope)) scope tag rest
//
// with tag 'l' for a list change (rest: its Kind, one byte), 'u' for a
// URI, 'k' for an extension's filter key, and no tag for a folder key
// (rest is the folder's normal form): the NUL never starts a URI or a
// normal form, and the length makes the scope unambiguous whatever its
// bytes.

// Tags of the scoped keys.
const (
	tagList = 'l'
	tagURI  = 'u'
	tagKey  = 'k'
)

// kindKey is the rest of a list change's scoped key.
func kindKey(k listen.Kind) string { return string(rune(k)) }

// scopeKeys makes the scoped keys of one scope. Its zero value is the
// unscoped index, whose keys are the keys themselves. A lookup builds its
// key in a buffer of its own, so that it does not allocate (m[string(b)]).
type scopeKeys struct {
	prefix []byte // "\x00" uvarint(len(scope)) scope; empty: unscoped
}

// makeScopeKeys returns the keys of scope, its prefix built in buf.
func makeScopeKeys(scope string, buf []byte) scopeKeys {
	b := append(buf[:0], 0)
	b = binary.AppendUvarint(b, uint64(len(scope)))
	return scopeKeys{prefix: append(b, scope...)}
}

// key returns the scoped key of tag and rest (tag 0: none), as a string
// to keep (Open's joins).
func (k scopeKeys) key(tag byte, rest string) string {
	b := make([]byte, 0, len(k.prefix)+1+len(rest))
	return string(k.append(b, tag, rest))
}

func (k scopeKeys) append(b []byte, tag byte, rest string) []byte {
	b = append(b, k.prefix...)
	if tag != 0 {
		b = append(b, tag)
	}
	return append(b, rest...)
}

// get looks up the set of tag and rest in m: rest itself in the unscoped
// index.
func (k scopeKeys) get(m map[string]*set, tag byte, rest string) *set {
	if len(k.prefix) == 0 {
		return m[rest]
	}
	var buf [128]byte
	return m[string(k.append(buf[:0], tag, rest))]
}

// scopesOf returns the distinct non-empty scopes of req.
func scopesOf(req *listen.Request) []string {
	if req == nil || len(req.Scopes) == 0 {
		return nil
	}
	var out []string
	for _, s := range req.Scopes {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// joinScopes indexes l, whose accepted filter is supported, under each of
// its scopes, as Open indexes it unscoped: for each list change it selects,
// each extension filter key, and each of its URIs (exact listeners: the
// URIs; folder listeners: their folder keys, in idx). h.mu is held for
// writing.
func (h *Hub) joinScopes(l *listener, scopes []string, supported listen.Filter, uris uriList, idx *folderIndex, folderKeys []string) {
	var buf [64]byte
	for _, scope := range scopes {
		k := makeScopeKeys(scope, buf[:0])
		for key, v := range supported {
			switch kind := listen.KindOf(key); {
			case kind == 0:
				l.join(setIn(h.scoped, k.key(tagKey, key)))
			case v == true:
				l.join(setIn(h.scoped, k.key(tagList, kindKey(kind))))
			}
		}
		if idx != nil {
			for _, f := range folderKeys {
				l.join(setIn(idx.sets, k.key(0, f)))
			}
		} else {
			for i := range uris.len() {
				if u, ok := uris.at(i); ok {
					l.joinOnce(setIn(h.scoped, k.key(tagURI, u)))
				}
			}
		}
	}
}

// selectScoped is selectSet for a publication with a scope: the candidates
// among the listeners of ev.Scope. h.mu is held.
func (h *Hub) selectScoped(ev *listen.Event, k scopeKeys) *set {
	switch ev.Kind {
	case listen.KindResourceUpdated:
		return k.get(h.scoped, tagURI, ev.URI)
	case listen.KindExtension:
		var best *set
		for key := range ev.Selector {
			s := k.get(h.scoped, tagKey, key)
			if s == nil {
				return nil
			}
			if best == nil || len(s.items) < len(best.items) {
				best = s
			}
		}
		return best
	}
	return k.get(h.scoped, tagList, kindKey(ev.Kind)) // a list change
}
