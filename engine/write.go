package engine

import (
	"context"
	"fmt"

	"github.com/ebbdb/ebb/index"
)

// opKind is what one write does.
type opKind uint8

const (
	opCreate opKind = iota + 1
	opUpsert
	opReplace
	opDelete
)

func (k opKind) String() string {
	return [...]string{"", "create", "upsert", "replace", "delete"}[k]
}

// op is one validated write, waiting for the commit loop.
type op struct {
	kind    opKind
	id      string
	ttl     int32  // the item's own ttl: 0 absent, -1, n
	body    []byte // stored form: system properties stripped
	ifMatch string

	// terms are the document's secondary-index terms, computed by the
	// writer under indexing policy generation termsGen (consistent mode).
	terms    []index.Term
	termsGen uint64
	termsSet bool
}

func newOp(kind opKind, doc []byte, opts []WriteOption) (op, error) {
	d, err := parseDocument(doc)
	if err != nil {
		return op{}, err
	}
	o := op{kind: kind, id: d.ID, ttl: d.TTL, body: d.Body}
	applyOptions(&o, opts)
	return o, nil
}

func applyOptions(o *op, opts []WriteOption) {
	var wo writeOptions
	for _, f := range opts {
		f(&wo)
	}
	o.ifMatch = wo.ifMatch
}

// Create writes a new item. It fails with ErrConflict when a live item with
// the same id exists; an expired one does not count.
func (c *Container) Create(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opCreate, doc, opts)
}

// Upsert writes the item, creating it or replacing its live version. With
// IfMatch it requires a live item with that etag.
func (c *Container) Upsert(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opUpsert, doc, opts)
}

// Replace overwrites a live item. It fails with ErrNotFound when the item
// does not exist or has expired, and with ErrPreconditionFailed on an
// IfMatch etag mismatch.
func (c *Container) Replace(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opReplace, doc, opts)
}

// Delete removes a live item. It fails with ErrNotFound when the item does
// not exist or has expired, and with ErrPreconditionFailed on an IfMatch
// etag mismatch.
func (c *Container) Delete(ctx context.Context, id string, opts ...WriteOption) error {
	if err := validateID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	o := op{kind: opDelete, id: id}
	applyOptions(&o, opts)
	_, err := c.commit(ctx, []op{o})
	return err
}

func (c *Container) writeDoc(ctx context.Context, kind opKind, doc []byte, opts []WriteOption) (Item, error) {
	o, err := newOp(kind, doc, opts)
	if err != nil {
		return Item{}, fmt.Errorf("%s in container %q: %w", kind, c.ID(), err)
	}
	c.writeTerms(&o)
	items, err := c.commit(ctx, []op{o})
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

// Batch collects writes to one container that commit together: all of them
// or none, in one journal entry and one fsync, like a Cosmos DB
// transactional batch. Build it with the methods below, then pass it to
// Container.ExecuteBatch. An id may appear at most once in a batch.
type Batch struct {
	ops []op
	err error
}

// Create adds a create to the batch.
func (b *Batch) Create(doc []byte, opts ...WriteOption) *Batch {
	return b.add(opCreate, doc, opts)
}

// Upsert adds an upsert to the batch.
func (b *Batch) Upsert(doc []byte, opts ...WriteOption) *Batch {
	return b.add(opUpsert, doc, opts)
}

// Replace adds a replace to the batch.
func (b *Batch) Replace(doc []byte, opts ...WriteOption) *Batch {
	return b.add(opReplace, doc, opts)
}

// Delete adds a delete to the batch.
func (b *Batch) Delete(id string, opts ...WriteOption) *Batch {
	if b.err != nil {
		return b
	}
	if err := validateID(id); err != nil {
		b.err = fmt.Errorf("batch operation %d (delete): %w: %w", len(b.ops), ErrInvalidDocument, err)
		return b
	}
	o := op{kind: opDelete, id: id}
	applyOptions(&o, opts)
	b.ops = append(b.ops, o)
	return b
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

func (b *Batch) add(kind opKind, doc []byte, opts []WriteOption) *Batch {
	if b.err != nil {
		return b
	}
	o, err := newOp(kind, doc, opts)
	if err != nil {
		b.err = fmt.Errorf("batch operation %d (%s): %w", len(b.ops), kind, err)
		return b
	}
	b.ops = append(b.ops, o)
	return b
}

// ExecuteBatch commits every operation of b, or none. It returns one Item
// per operation (the zero Item for deletes). When one operation fails, the
// error names it and nothing is written.
func (c *Container) ExecuteBatch(ctx context.Context, b *Batch) ([]Item, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.ops) == 0 {
		return nil, nil
	}
	seen := make(map[string]int, len(b.ops))
	for i, o := range b.ops {
		if j, dup := seen[o.id]; dup {
			return nil, fmt.Errorf("%w: batch operations %d and %d both write item %q", ErrInvalidDocument, j, i, o.id)
		}
		seen[o.id] = i
	}
	for i := range b.ops {
		c.writeTerms(&b.ops[i])
	}
	return c.commit(ctx, b.ops)
}
