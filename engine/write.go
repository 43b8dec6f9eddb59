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

// op is one validated write, waiting for the commit queue.
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
		if f != nil { // a nil option is no option
			f(&wo)
		}
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
