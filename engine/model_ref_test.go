package engine_test

// The reference model of the TTL rules (policy's doc, README "TTL rules") used by TestModel (model_test.go).
//
// It is written from those rules alone, independently of the engine: it imports
// neither policy nor index, and it does not compute expiry instants from a
// policy history. Instead it keeps, per container, the current DefaultTTL
// and, per item, its body, _ts, own ttl and etag, and it deletes an item the
// moment the model observes it expired (refModel.sweep). sweep runs at every
// step, after every clock move and on both sides of every DefaultTTL change,
// so "expiry is final" holds by construction: once gone, an item can only
// come back through a new write.

import (
	"errors"
	"sort"

	"github.com/ebbdb/ebb/engine"
)

// ttlOff is the DefaultTTL value of the model meaning "absent" (TTL off).
// Item ttl 0 likewise means "no ttl property"; both are invalid as values.
const ttlOff = 0

// refItem is a live item of the model.
type refItem struct {
	body map[string]any // user properties (id, ttl and the rest), no _ts/_etag
	ts   int64
	ttl  int32 // 0 absent, -1, or 1..2147483647
	etag string
}

// refContainer is one container of the model.
type refContainer struct {
	dttl  int64 // ttlOff, -1 or n
	items map[string]*refItem
	// etags lists every etag the engine issued per id in this incarnation of
	// the container, oldest first: an etag may never be issued twice for an id.
	etags map[string][]string
	// ghosts are the items that expired (not deleted or overwritten since),
	// kept only to count how often a DefaultTTL change would bring one back
	// under a rule that forgot "expiry is final" (refModel.traps).
	ghosts map[string]*refItem
}

func newRefContainer(dttl int64) *refContainer {
	return &refContainer{dttl: dttl, items: map[string]*refItem{}, etags: map[string][]string{}, ghosts: map[string]*refItem{}}
}

// refModel is the whole reference state.
type refModel struct {
	// now is the engine time the model expects. At Open it is the larger of
	// the wall clock and the time before; then every wall clock the engine
	// is shown moves it on by as much as the wall moved forward (the time
	// elapsed, to an injected clock), never back.
	now   int64
	wall  int64           // the wall clock the engine was last shown
	conts []*refContainer // by container index; nil when the container does not exist

	expirations int // items the model saw expire
	traps       int // DefaultTTL changes after which an expired item would be live again but for "expiry is final"
}

// lifetime is the effective TTL table of the TTL rules: the number of
// seconds after _ts at which the item expires, and whether it expires at all.
func lifetime(dttl int64, ttl int32) (int64, bool) {
	if dttl == ttlOff { // TTL off: nothing expires, item ttl ignored
		return 0, false
	}
	switch {
	case ttl == -1: // never, whatever the default
		return 0, false
	case ttl > 0: // the item's own ttl, under default -1 or n alike
		return int64(ttl), true
	case dttl == -1: // no own ttl, default -1: never
		return 0, false
	default: // no own ttl, default n
		return dttl, true
	}
}

// expiredAt says whether it is expired at now under default dttl. The sum
// is computed in 64 bits.
func expiredAt(it *refItem, dttl, now int64) bool {
	life, ok := lifetime(dttl, it.ttl)
	return ok && it.ts+life <= now
}

// sweep removes, for good, every item that is expired at m.now under its
// container's current DefaultTTL.
func (m *refModel) sweep() {
	for _, c := range m.conts {
		if c == nil {
			continue
		}
		for id, it := range c.items {
			if expiredAt(it, c.dttl, m.now) {
				delete(c.items, id)
				c.ghosts[id] = it
				m.expirations++
			}
		}
	}
}

// observe moves the model's now to the wall-clock second wall if that is
// later, and sweeps.
func (m *refModel) observe(wall int64) {
	m.now += max(0, wall-m.wall)
	m.wall = wall
	m.sweep()
}

// reopen is observe for an Open at wall: the engine's now starts at the
// larger of the wall and its floor.
func (m *refModel) reopen(wall int64) {
	m.now = max(m.now, wall)
	m.wall = wall
	m.sweep()
}

// setDefaultTTL changes container k's DefaultTTL at m.now: what expired under
// the old one is gone first, then the new one applies retroactively.
func (m *refModel) setDefaultTTL(k int, dttl int64) {
	m.sweep()
	c := m.conts[k]
	c.dttl = dttl
	for id, g := range c.ghosts {
		if c.items[id] == nil && !expiredAt(g, dttl, m.now) {
			m.traps++
		}
	}
	m.sweep()
}

// expect is the outcome the rules give a write of kind to id, with an IfMatch
// etag when hasEtag: nil or one of the sentinels.
func (c *refContainer) expect(kind opKind, id string, hasEtag bool, etag string) error {
	cur := c.items[id]
	switch kind {
	case opCreate:
		if cur != nil {
			return engine.ErrConflict
		}
		if hasEtag {
			return engine.ErrPreconditionFailed
		}
	case opUpsert:
		if hasEtag && (cur == nil || cur.etag != etag) {
			return engine.ErrPreconditionFailed
		}
	case opReplace, opDelete:
		if cur == nil {
			return engine.ErrNotFound
		}
		if hasEtag && cur.etag != etag {
			return engine.ErrPreconditionFailed
		}
	default:
		return errors.New("model: not a write")
	}
	return nil
}

// ids returns the live ids of c in order.
func (c *refContainer) ids() []string {
	ids := make([]string, 0, len(c.items))
	for id := range c.items {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// lastEtag returns the newest etag issued for id, if any.
func (c *refContainer) lastEtag(id string) (string, bool) {
	l := c.etags[id]
	if len(l) == 0 {
		return "", false
	}
	return l[len(l)-1], true
}

// staleEtag returns the newest etag issued for id that is not its current one.
func (c *refContainer) staleEtag(id string) (string, bool) {
	cur := ""
	if it := c.items[id]; it != nil {
		cur = it.etag
	}
	l := c.etags[id]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] != cur {
			return l[i], true
		}
	}
	return "", false
}

// issued reports whether etag was already issued for id.
func (c *refContainer) issued(id, etag string) bool {
	for _, e := range c.etags[id] {
		if e == etag {
			return true
		}
	}
	return false
}

// nextExpiry returns the earliest instant after now at which a live item
// expires under its container's current DefaultTTL, if any. The runner uses
// it only to choose clock moves that land on expiry instants.
func (m *refModel) nextExpiry() (int64, bool) {
	var next int64
	found := false
	for _, c := range m.conts {
		if c == nil {
			continue
		}
		for _, it := range c.items {
			if life, ok := lifetime(c.dttl, it.ttl); ok && (!found || it.ts+life < next) {
				next, found = it.ts+life, true
			}
		}
	}
	return next, found
}
