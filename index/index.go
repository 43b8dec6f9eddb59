package index

import (
	"cmp"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// Index is the in-memory view of one container's items. It is not safe for
// concurrent use: the engine guards it with the container's lock.
type Index struct {
	ids     map[string]uint32
	slots   slotPages
	nslots  uint32          // slots ever allocated; the next fresh slot number
	free    []uint32        // released slots, reused before fresh ones
	used    *roaring.Bitmap // slots holding an id
	expired *roaring.Bitmap // used slots whose item is marked expired
	buckets buckets

	live      int64 // items in use and not marked expired
	liveBytes int64 // their record sizes
	files     map[uint32]*Usage
}

// Usage is the live share of one file (segment or memtable generation):
// records that are the newest version of a live item.
type Usage struct {
	Records int64
	Bytes   int64
}

// New returns an empty index.
func New() *Index {
	return &Index{
		ids:     make(map[string]uint32),
		used:    roaring.New(),
		expired: roaring.New(),
		buckets: newBuckets(),
		files:   make(map[uint32]*Usage),
	}
}

// Get returns the item id's slot if the id is in use, whether or not it has
// expired by now: callers check Slot.Live. Expired items keep their slot
// until their records are purged or the id is written again.
func (x *Index) Get(id string) (Slot, bool) {
	n, ok := x.ids[id]
	if !ok {
		return Slot{}, false
	}
	return *x.slots.at(n), true
}

// Lookup returns the item id's slot if the item is live at now.
func (x *Index) Lookup(id string, now int64) (Slot, bool) {
	s, ok := x.Get(id)
	if !ok || !s.Live(now) {
		return Slot{}, false
	}
	return s, true
}

// Put makes s the newest version of s.ID, replacing any earlier one (live
// or expired). The caller has already computed s.Expire.
func (x *Index) Put(s Slot) {
	n, ok := x.ids[s.ID]
	if ok {
		x.unlink(n)
		s.ID = x.slots.at(n).ID // keep the one copy of the id string
	} else {
		n = x.alloc()
		x.ids[s.ID] = n
	}
	*x.slots.at(n) = s
	x.link(n)
}

// Delete removes the item id entirely, live or expired. It reports whether
// the id was in use.
func (x *Index) Delete(id string) bool {
	n, ok := x.ids[id]
	if !ok {
		return false
	}
	x.unlink(n)
	delete(x.ids, id)
	x.release(n)
	return true
}

// Relocate moves the version seq of item id to loc, if that version is
// still the item's newest (live or expired); it reports whether it did.
// Sealing and compaction call it after copying a record.
func (x *Index) Relocate(id string, seq uint64, loc Loc) bool {
	n, ok := x.ids[id]
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
	marked := 0
	expireOf := func(n uint32) int64 {
		if n >= x.nslots {
			return Never
		}
		return x.slots.at(n).Expire
	}
	x.buckets.takeDue(now, expireOf, func(n uint32) {
		if n >= x.nslots {
			return
		}
		s := x.slots.at(n)
		if s.ID == "" || s.Expire > now || x.expired.Contains(n) {
			return // freed, refiled, or already marked
		}
		x.account(s, -1)
		x.expired.Add(n)
		marked++
	})
	return marked
}

// NextDue is the earliest instant at which Advance has work, or Never.
func (x *Index) NextDue() int64 { return x.buckets.nextDue() }

// Recompute sets every unexpired item's expiry to expireAt(ts, ttl) and
// refiles it, after a change of the container's policy. Items already marked
// expired stay expired: expiry is final.
func (x *Index) Recompute(expireAt func(ts int64, ttl int32) int64) {
	x.buckets.reset()
	for _, n := range x.ids {
		s := x.slots.at(n)
		if x.expired.Contains(n) {
			continue
		}
		s.Expire = expireAt(s.TS, s.TTL)
		x.buckets.add(n, s.Expire)
	}
}

// PurgeExpired forgets every item marked expired whose record is in one of
// the files for which gone returns true, after the compactor removed those
// records from disk. It returns how many it forgot.
func (x *Index) PurgeExpired(gone func(file uint32) bool) int {
	var purged []uint32
	it := x.expired.Iterator()
	for it.HasNext() {
		n := it.Next()
		if gone(x.slots.at(n).Loc.File) {
			purged = append(purged, n)
		}
	}
	for _, n := range purged {
		s := x.slots.at(n)
		delete(x.ids, s.ID)
		x.expired.Remove(n)
		x.release(n)
	}
	return len(purged)
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
			if s := x.slots.at(n); s.Live(now) {
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

// Len is the number of ids in use, live or expired.
func (x *Index) Len() int { return len(x.ids) }

// Usage returns the live share of file, or zeros.
func (x *Index) Usage(file uint32) Usage {
	if u := x.files[file]; u != nil {
		return *u
	}
	return Usage{}
}

// Each calls fn for every id in use (live or expired) until fn returns false.
func (x *Index) Each(fn func(s *Slot, expired bool) bool) {
	for _, n := range x.ids {
		if !fn(x.slots.at(n), x.expired.Contains(n)) {
			return
		}
	}
}

// link files slot n, just written, into the counts and buckets.
func (x *Index) link(n uint32) {
	s := x.slots.at(n)
	x.account(s, +1)
	x.buckets.add(n, s.Expire)
}

// unlink takes slot n out of the counts, buckets and expired set.
func (x *Index) unlink(n uint32) {
	s := x.slots.at(n)
	if x.expired.Contains(n) {
		x.expired.Remove(n)
		return
	}
	x.account(s, -1)
	x.buckets.remove(n, s.Expire)
}

func (x *Index) account(s *Slot, sign int64) {
	x.live += sign
	x.liveBytes += sign * int64(s.Size)
	u := x.files[s.Loc.File]
	if u == nil {
		u = &Usage{}
		x.files[s.Loc.File] = u
	}
	u.Records += sign
	u.Bytes += sign * int64(s.Size)
	if u.Records == 0 {
		delete(x.files, s.Loc.File)
	}
}

func (x *Index) alloc() uint32 {
	if k := len(x.free); k > 0 {
		n := x.free[k-1]
		x.free = x.free[:k-1]
		x.used.Add(n)
		return n
	}
	n := x.nslots
	x.slots = x.slots.grow(n)
	x.nslots++
	x.used.Add(n)
	return n
}

func (x *Index) release(n uint32) {
	*x.slots.at(n) = Slot{}
	x.used.Remove(n)
	x.free = append(x.free, n)
}
