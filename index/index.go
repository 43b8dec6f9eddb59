package index

import (
	"cmp"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// Index is the in-memory view of one container's items. It is not safe for
// concurrent use: the engine guards it with the container's lock.
type Index struct {
	expireAt ExpireFunc
	ids      idTable
	slots    slotPages
	nslots   uint32          // slots ever allocated; the next fresh slot number
	reserved uint32          // slots a bulk load expects to fill (Reserve)
	warmed   uint64          // what Warm loads goes here, so that it is loaded
	free     []uint32        // released slots, reused before fresh ones
	used     *roaring.Bitmap // slots holding an id
	expired  *roaring.Bitmap // used slots whose item is marked expired
	buckets  buckets
	sec      secondary // secondary indexes: terms → slots (secondary.go)

	live      int64 // items in use and not marked expired
	liveBytes int64 // their record sizes
	files     map[uint32]*Usage
	// The file account changed last and its Usage in files (nil: none):
	// writes, loads and compactions account runs of records of one file.
	lastFile  uint32
	lastUsage *Usage
}

// Usage is the live share of one file (segment or memtable generation):
// records that are the newest version of a live item.
type Usage struct {
	Records int64
	Bytes   int64
}

// New returns an empty index whose items expire by expireAt.
func New(expireAt ExpireFunc) *Index {
	return &Index{
		expireAt: expireAt,
		ids:      newIDTable(0),
		used:     roaring.New(),
		expired:  roaring.New(),
		buckets:  newBuckets(),
		files:    make(map[uint32]*Usage),
	}
}

// Reserve makes room for n more ids, ahead of a bulk load: the id table
// is sized for them in one step, and their slots are allocated a few large
// slabs at a time rather than page by page. A later Reserve replaces the
// reservation: Reserve(0) ends it, so that slots are allocated page by
// page again.
func (x *Index) Reserve(n int) {
	x.ids.reserve(n)
	x.reserved = uint32(min(int64(x.nslots)+int64(n), 1<<32-1))
}

// ExpiresAt is the expiry instant of a slot's item, or Never.
func (x *Index) ExpiresAt(s *Slot) int64 { return x.expireAt(s.TS, s.TTL) }

// Get returns the item id's slot if the id is in use, whether or not it has
// expired: expired items keep their slot until their records are purged or
// the id is written again.
func (x *Index) Get(id string) (Slot, bool) {
	n, _, ok := x.ids.find(id, x.slots)
	if !ok {
		return Slot{}, false
	}
	return *x.slots.at(n), true
}

// Lookup returns the item id's slot if the item is live at now. The expiry
// check is inline: it never waits for Advance.
func (x *Index) Lookup(id string, now int64) (Slot, bool) {
	n, _, ok := x.ids.find(id, x.slots)
	if !ok {
		return Slot{}, false
	}
	s := x.slots.at(n)
	if x.expireAt(s.TS, s.TTL) <= now || x.expired.Contains(n) {
		return Slot{}, false
	}
	return *s, true
}

// LookupHinted is Lookup given hint, the slot number id was seen at before
// (a query collects slot numbers, then reads their items): while slot hint
// still holds id, the item is read there without hashing id and probing
// the id table. Any hint is safe; a stale one costs the lookup.
func (x *Index) LookupHinted(id string, hint uint32, now int64) (Slot, bool) {
	if hint < x.nslots {
		// A slot in use holds the id that maps to it; a free one is zeroed,
		// and no item has the empty id.
		if s := x.slots.at(hint); s.ID == id && id != "" {
			if x.expireAt(s.TS, s.TTL) <= now || x.expired.Contains(hint) {
				return Slot{}, false
			}
			return *s, true
		}
	}
	return x.Lookup(id, now)
}

// Put makes s the newest version of s.ID, replacing any earlier one (live
// or expired). It returns the new version's expiry instant and whether an
// earlier version was in the index.
func (x *Index) Put(s Slot) (expire int64, replaced bool) {
	p, _, _ := x.Seek(s.ID)
	return x.PutAt(p, s)
}

// Delete removes the item id entirely, live or expired. It reports whether
// the id was in use.
func (x *Index) Delete(id string) bool {
	p, _, _ := x.Seek(id)
	return x.DeleteAt(p)
}

// Probe is where Seek found an id in the index, or where it would go. It
// is valid until the index next changes.
type Probe struct {
	slot  uint32
	pos   int
	fp    uint32
	found bool
}

// Seek looks up id for an update decided by the id's current version: it
// returns the seq of that version (live or expired) and whether there is
// one, and the Probe that PutAt or DeleteAt take, so that a bulk load
// finds each id once rather than twice (Get, then Put). The index must not
// change between Seek and the call its Probe is given to.
func (x *Index) Seek(id string) (p Probe, seq uint64, ok bool) {
	return x.SeekHashed(id, x.Hash(id))
}

// IDHash is the hash of an id in one Index, the first thing a lookup
// computes (Hash).
type IDHash uint32

// Hash returns id's hash in x. Unlike every other method it may be called
// concurrently with anything, so that a bulk load can hash ids on other
// goroutines for SeekHashed and Warm.
func (x *Index) Hash(id string) IDHash { return IDHash(x.ids.fingerprint(id)) }

// SeekHashed is Seek of id, whose hash is h.
func (x *Index) SeekHashed(id string, h IDHash) (p Probe, seq uint64, ok bool) {
	n, pos, ok := x.ids.findHashed(id, uint32(h), x.slots)
	if ok {
		seq = x.slots.at(n).Seq
	}
	return Probe{slot: n, pos: pos, fp: uint32(h), found: ok}, seq, ok
}

// Warm starts loading into the CPU cache the places in the id table of
// the ids whose hashes are hs, for Seeks of them a little later. One Seek
// after another, each waits for its own cache miss in a table too large
// for the cache; a bulk load that warms a batch of ids before it seeks the
// one before has those misses overlap. It changes nothing in the index.
func (x *Index) Warm(hs []IDHash) {
	e := x.ids.entries
	mask := len(e) - 1
	var sum uint64
	for _, h := range hs {
		sum ^= e[int(h)&mask]
	}
	x.warmed ^= sum // so that the loads are not dropped
}

// PutAt is Put of s where Seek(s.ID) returned p.
func (x *Index) PutAt(p Probe, s Slot) (expire int64, replaced bool) {
	n := p.slot
	if p.found {
		x.unlink(n)
		s.ID = x.slots.at(n).ID // keep the one copy of the id string
		*x.slots.at(n) = s
	} else {
		n = x.alloc()
		x.slots = x.slots.grow(n, x.reserved)
		*x.slots.at(n) = s
		x.ids.insert(p.fp, n, p.pos)
	}
	return x.link(n), p.found
}

// DeleteAt is Delete of the id Seek returned p for; it reports whether the
// id was in use.
func (x *Index) DeleteAt(p Probe) bool {
	if !p.found {
		return false
	}
	x.unlink(p.slot)
	x.ids.remove(p.pos)
	x.release(p.slot)
	return true
}

// Relocate moves the version seq of item id to loc, if that version is
// still the item's newest (live or expired); it reports whether it did.
// Sealing and compaction call it after copying a record.
func (x *Index) Relocate(id string, seq uint64, loc Loc) bool {
	n, _, ok := x.ids.find(id, x.slots)
	if !ok {
		return false
	}
	s := x.slots.at(n)
	if s.Seq != seq {
		return false
	}
	if !x.expired.Contains(n) {
		x.account(s, -1)
		s.Loc = loc
		x.account(s, +1)
	} else {
		s.Loc = loc
	}
	return true
}

// IsCurrent reports whether version seq of item id is its newest and is live
// at now: the compactor keeps exactly these records.
func (x *Index) IsCurrent(id string, seq uint64, now int64) bool {
	s, ok := x.Lookup(id, now)
	return ok && s.Seq == seq
}

// Advance marks every item whose expiry has come by now: out of the live
// counts, into the expired set. It returns how many it marked. Its cost is
// proportional to the number of items that expired, not to the index size.
func (x *Index) Advance(now int64) int {
	marked, _ := x.AdvanceN(now, 0)
	return marked
}

// AdvanceN is Advance in steps: it visits at most limit filed slots (limit
// <= 0: all) and reports whether it is done, so that a caller can release
// its lock between steps when a great many items expire at once.
func (x *Index) AdvanceN(now int64, limit int) (marked int, done bool) {
	expireOf := func(n uint32) int64 {
		if !x.used.Contains(n) {
			return Never
		}
		return x.ExpiresAt(x.slots.at(n))
	}
	done = x.buckets.takeDue(now, limit, expireOf, func(n uint32) {
		if !x.used.Contains(n) || x.expired.Contains(n) {
			return // freed, or already marked
		}
		s := x.slots.at(n)
		if x.ExpiresAt(s) > now {
			return // refiled later by a policy change
		}
		x.account(s, -1)
		x.expired.Add(n)
		marked++
	})
	return marked, done
}

// NextDue is the earliest instant at which Advance has work, or Never.
func (x *Index) NextDue() int64 { return x.buckets.nextDue() }

// Recompute refiles every unexpired item by its expiry under the expiry
// function, after a change of the container's policy. Items already marked
// expired stay expired: expiry is final.
func (x *Index) Recompute() {
	x.buckets.reset()
	it := roaring.AndNot(x.used, x.expired).Iterator()
	for it.HasNext() {
		n := it.Next()
		x.buckets.add(n, x.ExpiresAt(x.slots.at(n)))
	}
}

// PurgeExpired forgets every item marked expired whose record is in one of
// the files for which gone returns true, after the compactor removed those
// records from disk. It returns how many it forgot.
func (x *Index) PurgeExpired(gone func(file uint32) bool) int {
	n, _, _ := x.PurgeExpiredN(gone, 0, 0)
	return n
}

// PurgeExpiredN is PurgeExpired in steps: it looks at the expired slots
// from slot from on and forgets at most limit of them (limit <= 0: all). It
// returns where the next step starts and whether it is done. Between steps
// the items not yet purged stay marked expired: invisible, as they should
// be.
func (x *Index) PurgeExpiredN(gone func(file uint32) bool, limit int, from uint32) (purged int, next uint32, done bool) {
	var batch []uint32
	it := x.expired.Iterator()
	it.AdvanceIfNeeded(from)
	done = true
	for it.HasNext() {
		n := it.Next()
		if !gone(x.slots.at(n).Loc.File) {
			continue
		}
		if limit > 0 && len(batch) == limit {
			next, done = n, false
			break
		}
		batch = append(batch, n)
	}
	for _, n := range batch {
		_, pos, _ := x.ids.find(x.slots.at(n).ID, x.slots)
		x.ids.remove(pos)
		x.expired.Remove(n)
		x.release(n)
	}
	return len(batch), next, done
}

// Live returns the slots of the items live at now, sorted by id: a snapshot
// for a scan. Marked expired items drop out with one AndNot of the expired
// set; any not yet marked (Advance not called for now) are filtered inline.
func (x *Index) Live(now int64) []Slot {
	out := make([]Slot, 0, x.live)
	it := roaring.AndNot(x.used, x.expired).ManyIterator()
	buf := make([]uint32, 256)
	for k := it.NextMany(buf); k > 0; k = it.NextMany(buf) {
		for _, n := range buf[:k] {
			if s := x.slots.at(n); x.ExpiresAt(s) > now {
				out = append(out, *s)
			}
		}
	}
	slices.SortFunc(out, func(a, b Slot) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Count is the number of live items and their record bytes, as of the last
// Advance.
func (x *Index) Count() (items, bytes int64) { return x.live, x.liveBytes }

// ExpiredPending is the number of items marked expired whose records may
// still be on disk.
func (x *Index) ExpiredPending() int64 { return int64(x.expired.GetCardinality()) }

// OldestExpired returns the earliest expiry instant among the items marked
// expired whose records are still on disk, and false if there are none: the
// age of the oldest byte waiting to be reclaimed. It walks the expired set.
func (x *Index) OldestExpired() (int64, bool) {
	oldest, any := Never, false
	it := x.expired.Iterator()
	for it.HasNext() {
		if e := x.ExpiresAt(x.slots.at(it.Next())); e < oldest {
			oldest, any = e, true
		}
	}
	return oldest, any
}

// Len is the number of ids in use, live or expired.
func (x *Index) Len() int { return x.ids.n }

// Usage returns the live share of file, or zeros.
func (x *Index) Usage(file uint32) Usage {
	if u := x.files[file]; u != nil {
		return *u
	}
	return Usage{}
}

// Each calls fn for every id in use (live or expired) until fn returns false.
func (x *Index) Each(fn func(s *Slot, expired bool) bool) {
	x.ids.each(func(n uint32) bool {
		return fn(x.slots.at(n), x.expired.Contains(n))
	})
}

// link files slot n, just written, into the counts and buckets and returns
// its expiry.
func (x *Index) link(n uint32) int64 {
	s := x.slots.at(n)
	x.account(s, +1)
	e := x.ExpiresAt(s)
	x.buckets.add(n, e)
	return e
}

// unlink takes slot n out of the counts, buckets and expired set.
func (x *Index) unlink(n uint32) {
	s := x.slots.at(n)
	if x.expired.Contains(n) {
		x.expired.Remove(n)
		return
	}
	x.account(s, -1)
	x.buckets.remove(n, x.ExpiresAt(s))
}

func (x *Index) account(s *Slot, sign int64) {
	x.live += sign
	x.liveBytes += sign * int64(s.Size)
	u := x.lastUsage
	if u == nil || x.lastFile != s.Loc.File {
		if u = x.files[s.Loc.File]; u == nil {
			u = &Usage{}
			x.files[s.Loc.File] = u
		}
		x.lastFile, x.lastUsage = s.Loc.File, u
	}
	u.Records += sign
	u.Bytes += sign * int64(s.Size)
	if u.Records == 0 {
		delete(x.files, s.Loc.File)
		x.lastUsage = nil
	}
}

func (x *Index) alloc() uint32 {
	var n uint32
	if k := len(x.free); k > 0 {
		n = x.free[k-1]
		x.free = x.free[:k-1]
	} else {
		n = x.nslots
		x.nslots++
	}
	x.used.Add(n)
	return n
}

func (x *Index) release(n uint32) {
	x.sec.drop(n) // before the slot can be reused: it must not keep old terms
	*x.slots.at(n) = Slot{}
	x.used.Remove(n)
	x.free = append(x.free, n)
}
