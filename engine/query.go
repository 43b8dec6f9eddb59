package engine

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
)

// Param is a query parameter: Name with its "@", and a Go value that maps
// to JSON (nil, bool, numbers, string, []any, map[string]any,
// json.RawMessage).
type Param struct {
	Name  string
	Value any
}

// Query runs a query in Cosmos DB's SQL dialect (the subset that package
// query documents) over the container's live items:
//
//	for it, err := range c.Query(ctx, "SELECT * FROM c WHERE c.user = @u ORDER BY c.n DESC", engine.Param{Name: "@u", Value: "x"}) { ... }
//
// Expired items are never in a result or a count: candidates drop every
// slot marked expired with one AndNot, and each item is checked against
// the clock again when it is read. Results come in ORDER BY order (ties
// by id) or, without ORDER BY, in id order, so OFFSET and LIMIT page
// deterministically. In a container with a partition key path, "id order"
// is partition key order, then id order (see Items).
//
// Each yielded Item carries the source item's ID, TS and ETag; Body is the
// projection (the whole document for SELECT *). A COUNT yields one Item
// whose Body is the count and whose other fields are empty. Parse errors
// wrap query.ErrSyntax and name the position and token; other bad queries
// wrap query.ErrInvalidQuery.
//
// Consistent indexing answers from the secondary index and sees the
// query's own writes; lazy indexing may miss writes of the last moments;
// with IndexingNone, or while the index is being built after Open or a
// policy change, queries scan every live item: the same results, more
// slowly. Explain tells which.
func (c *Container) Query(ctx context.Context, sql string, params ...Param) iter.Seq2[Item, error] {
	return c.query(ctx, sql, params, scope{}, nil)
}

// QueryInto is Query for callers that are done with each row's body before
// they take the next (they decode it, or copy what they keep), as ReadInto
// is Read for readers. The body of a whole-document row (SELECT *) that the
// index decided, as most are, is rendered into buf's storage (from buf[:0],
// grown when too small), the same storage for every such row, instead of
// memory of its own: a long result then allocates nothing per row for its
// bodies, which keeps the garbage collector, and the cost it puts on the
// caller's own allocations, out of the loop. Other rows (projections,
// counts, rows sorted in memory or checked against the WHERE as they are
// read) get bodies of their own, as from Query. Either way a row's Body
// may be used only until the loop asks for the next row; pass the last
// Body back as buf to reuse its capacity. ID, ETag and the other fields
// stay valid, and everything else is as for Query.
func (c *Container) QueryInto(ctx context.Context, sql string, buf []byte, params ...Param) iter.Seq2[Item, error] {
	return c.query(ctx, sql, params, scope{}, &rowBuf{buf})
}

// rowBuf is QueryInto's buffer, which the rows of one query share.
type rowBuf struct{ b []byte }

// query is Query over the items in scope sc (the zero scope: every item);
// with into, QueryInto.
func (c *Container) query(ctx context.Context, sql string, params []Param, sc scope, into *rowBuf) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		if err := c.db.usable(); err != nil {
			yield(Item{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(Item{}, err)
			return
		}
		q, err := c.prepareQuery(ctx, sql, params)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			yield(Item{}, err)
			return
		}
		c.runQuery(ctx, q, sc, into, yield)
	}
}

// Explain says how Query would run sql now: which indexes it would use and
// what it would re-check or scan. After Close it returns ErrClosed.
func (c *Container) Explain(sql string, params ...Param) (string, error) {
	if err := c.db.usable(); err != nil {
		return "", err
	}
	q, err := c.prepareQuery(context.Background(), sql, params)
	if err != nil {
		return "", err
	}
	defer c.unlockForQuery(c.lockForQuery())
	if c.deleted {
		return "", c.notFound()
	}
	plan, why := c.planLocked(q)
	var b strings.Builder
	fmt.Fprintf(&b, "container %q, indexing %s", c.id, c.props.Indexing)
	if why != "" {
		fmt.Fprintf(&b, " (%s)", why)
	}
	b.WriteString("\n")
	b.WriteString(plan.String())
	b.WriteString("\ndrop expired: one AndNot of the expired bitmap, then the inline expiry check")
	if q.IsCount() && plan.Access != nil && plan.Exact && !q.CountNeedsDocs() {
		b.WriteString("\ncount from the index: no document is read")
	}
	return b.String(), nil
}

// prepareQuery parses and binds sql, stopping with ctx's error soon after
// ctx ends. The query text is held to the limits of package query
// (query.MaxLength and the rest, errors matching query.ErrLimit), and the
// parameters given to query.MaxParams.
func (c *Container) prepareQuery(ctx context.Context, sql string, params []Param) (*query.Bound, error) {
	if len(params) > query.MaxParams {
		return nil, fmt.Errorf("container %q: %w: %d parameters given; query.MaxParams allows %d", c.id, query.ErrLimit, len(params), query.MaxParams)
	}
	q, err := c.db.parse(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.id, err)
	}
	c.startDeferredBuild()
	vals := make(map[string]query.Value, len(params))
	for _, p := range params {
		if _, dup := vals[p.Name]; dup {
			return nil, fmt.Errorf("container %q: %w: parameter %s is given twice", c.id, query.ErrInvalidQuery, p.Name)
		}
		v, err := query.FromGo(p.Value)
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", c.id, &paramError{name: p.Name, err: err})
		}
		vals[p.Name] = v
	}
	b, err := q.Bind(vals)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.id, err)
	}
	return b, nil
}

// paramError is a parameter value that has no JSON form. It matches both
// query.ErrInvalidQuery and the cause (query.ErrInvalidJSON), and reads
// "query: invalid query: parameter @x: invalid JSON: ..." without saying
// "query:" twice.
type paramError struct {
	name string
	err  error
}

func (e *paramError) Error() string {
	return fmt.Sprintf("%v: parameter %s: %s", query.ErrInvalidQuery, e.name, strings.TrimPrefix(e.err.Error(), "query: "))
}

func (e *paramError) Unwrap() []error { return []error{query.ErrInvalidQuery, e.err} }

// planLocked plans q against the index as it is; c.mu is held. Only a
// consistent index is trusted alone: a lazy one may still hold an item's
// terms from an older version, so what it selects is re-checked and it
// orders nothing (the plan says so, for collect and Explain alike).
func (c *Container) planLocked(q *query.Bound) (*query.Plan, string) {
	usable, why := c.indexUsableLocked()
	cfg := c.ix.cfg.Load()
	indexed := func(p string) bool { return usable && cfg.indexed(p) }
	plan := q.Plan(indexed)
	if !cfg.idTerms {
		plan = withoutIDRanges(plan)
	}
	if cfg.mode != IndexingConsistent {
		if plan.Access != nil {
			plan.Exact = false
		}
		if plan.Order != nil {
			plan.Order.Indexed = false
		}
	}
	return plan, why
}

// candidates are the slots a query reads, taken under the lock.
type candidates struct {
	plan  *query.Plan
	slots []cand // in id order; or, for an index walk, in ORDER BY order
	// keys, for an index walk, holds the index key each slot was walked by
	// (query.Key of its ORDER BY value when collected).
	keys  []string
	exact bool // the index alone decided the WHERE for these slots
	// walked: slots are in ORDER BY order from the index, and rest holds
	// the candidates without a scalar at the ORDER BY path (undefined,
	// arrays, objects), in id order, for the caller to place.
	walked bool
	rest   []cand
	// counted: an exact COUNT answered from the index alone.
	counted bool
	count   int64
	// partial: the walk stopped once it had the window's worth of slots;
	// if some are gone when read, the query runs again without the stop.
	partial bool
	// buf, when not nil, holds slots and keys for walkBufs once the query
	// is done with them (put).
	buf *walkBuf
}

// walkBuf is the storage of a stopped walk's slots and keys, reused from
// query to query (walkBufs): a TOP n query needs a few of each.
type walkBuf struct {
	slots []cand
	keys  []string
}

var walkBufs = sync.Pool{New: func() any { return new(walkBuf) }}

// put gives b back to walkBufs, holding nothing of its query; b may be nil.
func (b *walkBuf) put() {
	if b == nil || cap(b.slots) > 2*maxWalkPrealloc || cap(b.keys) > 2*maxWalkPrealloc {
		return
	}
	clear(b.slots)
	clear(b.keys)
	b.slots, b.keys = b.slots[:0], b.keys[:0]
	walkBufs.Put(b)
}

// cand is one candidate of a query: a slot live when collected, and its
// slot number, where the read looks for the item first
// (index.LookupHinted).
type cand struct {
	index.Slot
	n uint32
}

// byID orders candidates by id.
func byID(a, b cand) int { return cmp.Compare(a.ID, b.ID) }

// walkSlack is how many slots beyond the window a stopped walk takes, so
// that a few items deleted or expired meanwhile need no second walk.
const walkSlack = 4

// collect plans q and returns the live slots it must read. With mayStop,
// an index walk for ORDER BY may stop once it holds the window's worth.
// It checks ctx as it goes (per access node, every few thousand slots) and
// returns ctx's error once ctx ends.
//
// Only the items in scope sc are candidates (a partition's query).
func (c *Container) collect(ctx context.Context, q *query.Bound, sc scope, now int64, mayStop bool) (candidates, error) {
	if c.nextDue.Load() <= now {
		// Something may be due: mark it, under the write lock. (Most
		// queries find nothing due and take no write lock; an item due
		// and not yet marked is left out by the inline expiry check.)
		c.advanceInSteps(now)
	}
	c.settleExpiries()
	defer c.unlockForQuery(c.lockForQuery())
	if c.deleted {
		return candidates{}, c.notFound()
	}
	plan, _ := c.planLocked(q)
	if err := ctx.Err(); err != nil {
		return candidates{}, err
	}
	// bm is the slots the WHERE's index access names, or, left nil until
	// needed, every live slot (an ordered walk checks slots one by one
	// instead: the live set is a copy of every slot).
	var bm *roaring.Bitmap
	if plan.Access != nil {
		var err error
		if bm, err = c.evalAccessLocked(ctx, plan.Access); err != nil {
			return candidates{}, err
		}
		c.idx.DropExpired(bm) // one AndNot of the expired set
	}
	if sc.prefix != "" {
		if bm == nil {
			bm = c.scopeBitmapLocked(sc)
		} else {
			bm.And(c.scopeBitmapLocked(sc))
		}
	}
	out := candidates{plan: plan, exact: plan.Access != nil && plan.Exact}
	if o := plan.Order; o != nil && o.Indexed && !q.IsCount() {
		return c.walkLocked(ctx, q, out, bm, now, mayStop)
	}
	if bm == nil {
		bm = c.idx.LiveBitmap()
	}
	if q.IsCount() && out.exact && !q.CountNeedsDocs() {
		// The index decided the WHERE: count live slots, read nothing.
		out.counted = true
		if n, ok := c.idx.CountLive(bm, now); ok {
			out.count = int64(n)
			return out, ctx.Err()
		}
		it := bm.Iterator()
		for it.HasNext() {
			if _, ok := c.idx.SlotAt(it.Next(), now); ok { // the inline expiry check
				out.count++
			}
		}
		return out, ctx.Err()
	}
	var err error
	out.slots, err = c.liveSlotsLocked(ctx, bm, now, make([]cand, 0, bm.GetCardinality()))
	return out, err
}

// walkLocked collects the candidates of an ORDER BY that an index orders:
// the slots of bm (nil: every live slot) in the order of their keys at the
// ORDER BY path, and, apart (out.rest), those with no scalar there. c.mu is
// held.
func (c *Container) walkLocked(ctx context.Context, q *query.Bound, out candidates, bm *roaring.Bitmap, now int64, mayStop bool) (candidates, error) {
	o, plan := out.plan.Order, out.plan
	out.walked = true
	// When every candidate is known to match (no WHERE, or an exact
	// one), the walk stops once the window is covered; items that
	// vanish before they are read are made up for by reading on.
	need := int64(-1)
	if skip, limit := q.Window(); mayStop && limit >= 0 && (plan.Access == nil || plan.Exact) {
		need = satAdd(satAdd(skip, limit), walkSlack)
		if need <= maxWalkPrealloc {
			out.buf = walkBufs.Get().(*walkBuf)
			out.slots, out.keys = slices.Grow(out.buf.slots, int(need)), slices.Grow(out.buf.keys, int(need))
		}
	}
	var err error
	c.idx.TermWalk(o.Path, o.Desc, func(key string, slots index.Postings) bool {
		n := len(out.slots)
		switch few := slots.Few(); {
		case few != nil && len(few) <= walkFewSlots:
			out.slots = c.liveSlotsAmongLocked(few, bm, now, out.slots)
		case bm == nil:
			out.slots, err = c.liveSlotsLocked(ctx, slots.Bitmap(), now, out.slots)
		default:
			out.slots, err = c.liveSlotsLocked(ctx, roaring.And(slots.Bitmap(), bm), now, out.slots)
		}
		if err != nil {
			return false
		}
		for range len(out.slots) - n {
			out.keys = append(out.keys, key)
		}
		return need < 0 || int64(len(out.slots)) < need
	})
	if err != nil {
		return candidates{}, err
	}
	if out.buf != nil {
		out.buf.slots, out.buf.keys = out.slots, out.keys
	}
	if !c.idx.EveryUsedSlotHasTerm(o.Path) {
		if out.rest, err = c.liveSlotsLocked(ctx, c.idx.SlotsWithoutTerm(bm, o.Path), now, nil); err != nil {
			return candidates{}, err
		}
	}
	out.partial = need >= 0
	return out, nil
}

// maxWalkPrealloc bounds the candidates a stopping walk makes room for
// before it starts (a TOP n, plus walkSlack, takes about that many).
const maxWalkPrealloc = 1024

// satAdd is a + b for a, b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ctxCheckEvery is how many slots pass between checks of the context.
const ctxCheckEvery = 4096

// liveSlotsLocked appends the slots of bm live at now to dst, in id order
// among themselves, or returns ctx's error once ctx ends; c.mu is held.
func (c *Container) liveSlotsLocked(ctx context.Context, bm *roaring.Bitmap, now int64, dst []cand) ([]cand, error) {
	if bm.IsEmpty() {
		return dst, nil
	}
	start := len(dst)
	it := bm.Iterator()
	for i := 0; it.HasNext(); i++ {
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return dst, err
			}
		}
		n := it.Next()
		if s, ok := c.idx.SlotAt(n, now); ok { // the inline expiry check
			dst = append(dst, cand{s, n})
		}
	}
	sortByID(dst[start:])
	return dst, nil
}

// walkFewSlots is the most slots of one key that an ORDER BY walk checks
// one by one against the candidates; a key with more is intersected with
// them as bitmaps.
const walkFewSlots = 64

// liveSlotsAmongLocked appends the slots of few that are in bm (nil: any)
// and live at now to dst, in id order among themselves, without building a
// bitmap: for the keys of an ORDER BY walk, most of which hold a slot or
// two. c.mu is held.
func (c *Container) liveSlotsAmongLocked(few []uint32, bm *roaring.Bitmap, now int64, dst []cand) []cand {
	start := len(dst)
	for _, n := range few {
		if bm == nil || bm.Contains(n) {
			if s, ok := c.idx.SlotAt(n, now); ok { // the inline expiry check
				dst = append(dst, cand{s, n})
			}
		}
	}
	if len(dst)-start > 1 {
		slices.SortFunc(dst[start:], byID)
	}
	return dst
}

// evalAccessLocked computes the slots an access path names, or returns ctx's
// error once ctx ends; c.mu is held.
func (c *Container) evalAccessLocked(ctx context.Context, a *query.Access) (*roaring.Bitmap, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch a.Kind {
	case query.Eq:
		if a.Path == idPath && c.kp == nil {
			return c.idSlotsLocked(a.Keys), nil
		}
		return c.idx.TermEq(a.Path, a.Keys...), nil
	case query.Range:
		return c.idx.TermRange(a.Path, index.KeyBound(a.Lo), index.KeyBound(a.Hi)), nil
	case query.Prefix:
		return c.idx.TermPrefix(a.Path, a.Keys[0]), nil
	case query.And, query.Or:
		bms := make([]*roaring.Bitmap, len(a.Children))
		for i, ch := range a.Children {
			var err error
			if bms[i], err = c.evalAccessLocked(ctx, ch); err != nil {
				return nil, err
			}
		}
		if a.Kind == query.And {
			return roaring.FastAnd(bms...), nil
		}
		return roaring.FastOr(bms...), nil
	}
	return c.idx.LiveBitmap(), nil
}
