package engine

// The partition-key API agreed with the HTTP gateway (ebb serve): names and
// signatures as agreed, no deviation.

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
)

// Partition scopes calls to the items of one partition key value of a
// container, as Cosmos DB's point operations name (partition key, id). It
// is a value to make when needed: Container.Partition only builds it. On a
// container without a partition key path, the partition of NoneKey() is
// the container itself, and every call of any other fails with
// ErrInvalidPartitionKey.
type Partition struct {
	c  *Container
	pk PartitionKey
	// prefix is the item-key prefix of pk's items (pkey.Prefix) in a
	// container with a key path; "" without one.
	prefix string
	// err, when set, fails every call: a key that cannot be used in c.
	err error
}

// Partition returns the partition of c whose key value is k.
func (c *Container) Partition(k PartitionKey) *Partition {
	p := &Partition{c: c, pk: k}
	switch {
	case c.kp == nil && !k.IsNone():
		p.err = fmt.Errorf("%w: container %q has no partition key path, so its only partition is None ([{}]), not %s", ErrInvalidPartitionKey, c.id, k)
	case c.kp != nil:
		if err := k.check(); err != nil {
			p.err = fmt.Errorf("container %q: %w", c.id, err)
		} else {
			p.prefix = pkey.Prefix(k.k)
		}
	}
	return p
}

// Key is the partition's key value.
func (p *Partition) Key() PartitionKey { return p.pk }

// key is the item key of id in p.
func (p *Partition) key(id string) string {
	if p.c.kp == nil {
		return id
	}
	return p.prefix + id
}

// Read returns the item id of the partition, or ErrNotFound when it does
// not exist or has expired.
func (p *Partition) Read(ctx context.Context, id string) (Item, error) {
	if p.err != nil {
		return Item{}, p.err
	}
	return p.c.readID(ctx, id, p.key(id))
}

// ReadInto is Read rendering the body into buf's storage, as
// Container.ReadInto.
func (p *Partition) ReadInto(ctx context.Context, id string, buf []byte) (Item, error) {
	if p.err != nil {
		return Item{}, p.err
	}
	return p.c.readIDInto(ctx, id, p.key(id), buf)
}

// Create writes a new item in the partition: the document's value at the
// key path must be the partition's key (absent stands for None), else
// ErrInvalidPartitionKey. It fails with ErrConflict when a live item with
// the same id exists in the partition.
func (p *Partition) Create(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return p.write(ctx, opCreate, doc, opts)
}

// Upsert is Container.Upsert within the partition (see Create).
func (p *Partition) Upsert(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return p.write(ctx, opUpsert, doc, opts)
}

// Replace is Container.Replace within the partition (see Create).
func (p *Partition) Replace(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return p.write(ctx, opReplace, doc, opts)
}

func (p *Partition) write(ctx context.Context, kind opKind, doc []byte, opts []WriteOption) (Item, error) {
	if p.err != nil {
		return Item{}, p.err
	}
	return p.c.writeDoc(ctx, kind, doc, opts, &p.pk)
}

// Delete removes the live item id of the partition; see Container.Delete.
func (p *Partition) Delete(ctx context.Context, id string, opts ...WriteOption) error {
	if p.err != nil {
		return p.err
	}
	return p.c.delete(ctx, id, p.key(id), opts)
}

// NewBatch returns an empty batch whose operations are all in the
// partition (a document whose key differs fails the batch with
// ErrInvalidPartitionKey); run it with the container's ExecuteBatch.
func (p *Partition) NewBatch() *Batch {
	b := p.c.newBatch()
	b.part = p
	if p.err != nil {
		b.err = p.err
	}
	return b
}

// Query is Container.Query over the partition's items only.
func (p *Partition) Query(ctx context.Context, sql string, params ...Param) iter.Seq2[Item, error] {
	if p.err != nil {
		return failSeq(p.err)
	}
	return p.c.query(ctx, sql, params, p.scope(), nil)
}

// QueryInto is Container.QueryInto over the partition's items only.
func (p *Partition) QueryInto(ctx context.Context, sql string, buf []byte, params ...Param) iter.Seq2[Item, error] {
	if p.err != nil {
		return failSeq(p.err)
	}
	return p.c.query(ctx, sql, params, p.scope(), &rowBuf{buf})
}

// Items is Container.Items over the partition's items only, in id order.
func (p *Partition) Items(ctx context.Context) iter.Seq2[Item, error] {
	if p.err != nil {
		return failSeq(p.err)
	}
	return p.c.items(ctx, p.scope())
}

// scope selects p's items: every item for the None partition of a
// container without a key path.
func (p *Partition) scope() scope { return scope{prefix: p.prefix, key: p.pk.k} }

// scope is the part of a container a query runs over: the items whose item
// keys start with prefix, the partition of key; every item when prefix is
// "".
type scope struct {
	prefix string
	key    pkey.Key
}

// scopeBitmapLocked returns the slots of the live (not marked expired)
// items in scope s. When the index is consistent, ready and keeps terms at
// the key path, it starts from the slots whose value there is s's key
// (None has no term: it scans); else it looks at every slot's item key.
// c.mu is held.
func (c *Container) scopeBitmapLocked(s scope) *roaring.Bitmap {
	cfg := c.ix.cfg.Load()
	path := query.TermPath(c.kp...)
	if usable, _ := c.indexUsableLocked(); usable && cfg.mode == IndexingConsistent && cfg.indexed(path) {
		if k, ok := query.Key(keyValue(s.key)); ok && s.key.Kind != pkey.None {
			bm := c.idx.TermEq(path, k)
			c.idx.KeepPrefix(bm, s.prefix) // exact whatever the terms say
			c.idx.DropExpired(bm)
			return bm
		}
	}
	return c.idx.PrefixBitmap(s.prefix)
}

// keyValue is k as a query value (None: undefined, which has no key).
func keyValue(k pkey.Key) query.Value {
	switch k.Kind {
	case pkey.Null:
		return query.NullValue()
	case pkey.False:
		return query.BoolValue(false)
	case pkey.True:
		return query.BoolValue(true)
	case pkey.Number:
		return query.NumberValue(k.N)
	case pkey.String:
		return query.StringValue(k.S)
	}
	return query.Value{}
}

// failSeq yields err once.
func failSeq(err error) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) { yield(Item{}, err) }
}

// scopeSlotsLocked returns the slots of the items in scope sc live at
// now, sorted by item key; c.mu is held.
func (c *Container) scopeSlotsLocked(sc scope, now int64) []index.Slot {
	bm := c.scopeBitmapLocked(sc)
	out := make([]index.Slot, 0, bm.GetCardinality())
	it := bm.Iterator()
	for it.HasNext() {
		if s, ok := c.idx.SlotAt(it.Next(), now); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b index.Slot) int { return strings.Compare(a.ID, b.ID) })
	return out
}
