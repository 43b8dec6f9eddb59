package engine

import (
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/ebbdb/ebb/engine/query"
)

// Item ids are the primary index's keys, so the secondary index keeps no
// terms at /id (a path whose every value is distinct costs it about 100
// B/item). Equality on c.id (=, IN) is answered from the primary index;
// ranges and prefixes on c.id are left to the scan and the re-check, and
// ORDER BY c.id is the order candidates already come in. In a container
// with a partition key none of this holds: the primary index's keys are
// composites of key value and id (pkey), so /id keeps secondary terms like
// any path (indexConfig.idTerms) and ORDER BY c.id sorts.

// idPath is the term path of the id property.
const idPath = "/id"

// stringKeyTag is the key prefix of every string value (query.Key).
var stringKeyTag = func() string {
	k, _ := query.Key(query.StringValue(""))
	return k
}()

// idSlotsLocked is the primary index's answer to c.id IN (keys); c.mu is
// held.
func (c *Container) idSlotsLocked(keys []string) *roaring.Bitmap {
	bm := roaring.New()
	for _, k := range keys {
		id, ok := strings.CutPrefix(k, stringKeyTag)
		if !ok {
			continue // ids are strings: c.id = 5 matches nothing
		}
		if n, ok := c.idx.SlotOf(id); ok {
			bm.Add(n)
		}
	}
	return bm
}

// withoutIDRanges makes a plan servable when /id has no secondary terms:
// a range or prefix on /id becomes "no index" (a superset, so the WHERE is
// then re-checked), and ORDER BY c.id needs no walk.
func withoutIDRanges(p *query.Plan) *query.Plan {
	a, lost := pruneIDAccess(p.Access)
	p.Access = a
	if lost {
		p.Exact = false
	}
	if p.Order != nil && p.Order.Path == idPath {
		p.Order.Indexed = false
	}
	return p
}

// pruneIDAccess returns a, with every node that needs /id terms other than
// equality replaced by nil (every item), and whether it replaced any.
func pruneIDAccess(a *query.Access) (*query.Access, bool) {
	if a == nil {
		return nil, false
	}
	switch a.Kind {
	case query.Range, query.Prefix:
		if a.Path == idPath {
			return nil, true
		}
	case query.And:
		kids, lost := a.Children[:0:0], false
		for _, ch := range a.Children {
			k, l := pruneIDAccess(ch)
			lost = lost || l
			if k != nil {
				kids = append(kids, k)
			}
		}
		switch len(kids) {
		case 0:
			return nil, lost
		case 1:
			return kids[0], lost
		}
		return &query.Access{Kind: query.And, Children: kids}, lost
	case query.Or:
		kids, lost := a.Children[:0:0], false
		for _, ch := range a.Children {
			k, l := pruneIDAccess(ch)
			if k == nil {
				return nil, true // one side needs a scan: so does the OR
			}
			lost = lost || l
			kids = append(kids, k)
		}
		return &query.Access{Kind: query.Or, Children: kids}, lost
	}
	return a, false
}
