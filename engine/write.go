package engine

import (
	"context"
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/pkey"
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
	// omitBody: the Item returned has no Body (OmitBody).
	omitBody bool
}

// newOp validates a write of doc to a container without a partition key.
func newOp(kind opKind, doc []byte, opts []WriteOption) (op, error) {
	return newKeyedOp(kind, doc, opts, nil, nil)
}

// newKeyedOp validates a write of doc to a container whose partition key
// path is kp (nil: none). With a key path, the op's id is the item key
// composed of the document's key value and id; want, if not nil, is the
// key the caller named, which the document's must equal.
func newKeyedOp(kind opKind, doc []byte, opts []WriteOption, kp keyPath, want *PartitionKey) (op, error) {
	d, err := parseDocumentKey(doc, kp)
	if err != nil {
		return op{}, err
	}
	o := op{kind: kind, id: d.ID, ttl: d.TTL, body: d.Body}
	if kp != nil {
		if want != nil && d.Key != want.k {
			return op{}, fmt.Errorf("%w: item %s: partition key %s in the document differs from %s named",
				ErrInvalidPartitionKey, docfmt.QuoteShort(d.ID), d.Key, want.k)
		}
		o.id = pkey.Compose(d.Key, d.ID)
	}
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
	o.ifMatch, o.omitBody = wo.ifMatch, wo.omitBody
}

// Create writes a new item. It fails with ErrConflict when a live item with
// the same id (and partition key) exists; an expired one does not count. On
// a container with a partition key path the key is the document's value at
// that path.
func (c *Container) Create(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opCreate, doc, opts, nil)
}

// Upsert writes the item, creating it or replacing its live version. With
// IfMatch it requires a live item with that etag.
func (c *Container) Upsert(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opUpsert, doc, opts, nil)
}

// Replace overwrites a live item. It fails with ErrNotFound when the item
// does not exist or has expired, and with ErrPreconditionFailed on an
// IfMatch etag mismatch.
func (c *Container) Replace(ctx context.Context, doc []byte, opts ...WriteOption) (Item, error) {
	return c.writeDoc(ctx, opReplace, doc, opts, nil)
}

// Delete removes a live item. It fails with ErrNotFound when the item does
// not exist or has expired, and with ErrPreconditionFailed on an IfMatch
// etag mismatch.
//
// On a container with a partition key path it fails with
// ErrInvalidPartitionKey: use Container.Partition(key).Delete.
func (c *Container) Delete(ctx context.Context, id string, opts ...WriteOption) error {
	if c.kp != nil {
		return c.needKey("Delete")
	}
	return c.delete(ctx, id, id, opts)
}

// delete deletes the item whose key is key and whose id is id.
func (c *Container) delete(ctx context.Context, id, key string, opts []WriteOption) error {
	if err := validateID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	o := op{kind: opDelete, id: key}
	applyOptions(&o, opts)
	_, err := c.commit(ctx, []op{o}, false)
	return err
}

// writeDoc writes doc; want, if not nil, is the partition key the caller
// named (Partition's calls).
func (c *Container) writeDoc(ctx context.Context, kind opKind, doc []byte, opts []WriteOption, want *PartitionKey) (Item, error) {
	o, err := newKeyedOp(kind, doc, opts, c.kp, want)
	if err != nil {
		return Item{}, fmt.Errorf("%s in container %q: %w", kind, c.ID(), err)
	}
	items, err := c.commit(ctx, []op{o}, false)
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}
