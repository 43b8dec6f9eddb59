package engine

import (
	"context"
	"fmt"
)

// Default batch limits, those of a Cosmos DB transactional batch. Options
// MaxBatchOperations and MaxBatchBytes change them for a DB.
const (
	// DefaultMaxBatchOperations is how many operations a batch may hold.
	DefaultMaxBatchOperations = 100
	// DefaultMaxBatchBytes is how many bytes of documents a batch may hold,
	// counted as MaxDocumentSize counts them (without system properties).
	DefaultMaxBatchBytes = 2 << 20
)

// Batch collects writes to one container that commit together: all of them
// or none, in one journal entry and one fsync, like a Cosmos DB
// transactional batch. Build it with the methods below, then pass it to
// Container.ExecuteBatch. An id may appear at most once in a batch.
//
// A batch is bounded, as it is built: the zero Batch (`var b
// engine.Batch`) by DefaultMaxBatchOperations and DefaultMaxBatchBytes,
// one from Container.NewBatch by its DB's Options.MaxBatchOperations and
// MaxBatchBytes. The operation that would go beyond a limit is not added;
// ExecuteBatch then fails with ErrBatchTooLarge, naming the limit. The
// first invalid operation likewise makes ExecuteBatch fail with its error.
// Methods on a nil *Batch do nothing and return nil.
type Batch struct {
	ops   []op
	bytes int // documents' stored bytes so far
	err   error
	// maxOps and maxBytes are the limits; 0 means the defaults.
	maxOps, maxBytes int
}

// NewBatch returns an empty batch bounded by the DB's
// Options.MaxBatchOperations and MaxBatchBytes. It only builds a value, so
// it answers after Close too; ExecuteBatch then returns ErrClosed.
func (c *Container) NewBatch() *Batch {
	return &Batch{maxOps: c.db.opts.MaxBatchOperations, maxBytes: c.db.opts.MaxBatchBytes}
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
	if b == nil || b.err != nil || !b.room(opDelete) {
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
func (b *Batch) Len() int {
	if b == nil {
		return 0
	}
	return len(b.ops)
}

func (b *Batch) limits() (ops, bytes int) {
	ops, bytes = b.maxOps, b.maxBytes
	if ops <= 0 {
		ops = DefaultMaxBatchOperations
	}
	if bytes <= 0 {
		bytes = DefaultMaxBatchBytes
	}
	return ops, bytes
}

// room reports whether one more operation fits the operation limit,
// recording ErrBatchTooLarge when it does not.
func (b *Batch) room(kind opKind) bool {
	if maxOps, _ := b.limits(); len(b.ops) >= maxOps {
		b.err = fmt.Errorf("%w: batch operation %d (%s) is one more than the limit of %d operations", ErrBatchTooLarge, len(b.ops), kind, maxOps)
		return false
	}
	return true
}

func (b *Batch) add(kind opKind, doc []byte, opts []WriteOption) *Batch {
	if b == nil || b.err != nil || !b.room(kind) {
		return b
	}
	o, err := newOp(kind, doc, opts)
	if err != nil {
		b.err = fmt.Errorf("batch operation %d (%s): %w", len(b.ops), kind, err)
		return b
	}
	if _, maxBytes := b.limits(); b.bytes+len(o.body) > maxBytes {
		b.err = fmt.Errorf("%w: batch operation %d (%s) of %d bytes brings the batch to %d bytes of documents, more than the limit of %d",
			ErrBatchTooLarge, len(b.ops), kind, len(o.body), b.bytes+len(o.body), maxBytes)
		return b
	}
	b.bytes += len(o.body)
	b.ops = append(b.ops, o)
	return b
}

// ExecuteBatch commits every operation of b, or none. It returns one Item
// per operation (the zero Item for deletes). When one operation fails, the
// error names it and nothing is written. A nil or empty batch is refused
// with ErrEmptyBatch, and one beyond the DB's limits (Options
// MaxBatchOperations and MaxBatchBytes) with ErrBatchTooLarge.
func (c *Container) ExecuteBatch(ctx context.Context, b *Batch) ([]Item, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: ExecuteBatch on container %q was given a nil batch", ErrEmptyBatch, c.id)
	}
	if b.err != nil {
		return nil, b.err
	}
	if len(b.ops) == 0 {
		return nil, fmt.Errorf("%w: the batch for container %q has no operations", ErrEmptyBatch, c.id)
	}
	if maxOps := c.db.opts.MaxBatchOperations; len(b.ops) > maxOps {
		return nil, fmt.Errorf("%w: %d operations, more than the limit of %d", ErrBatchTooLarge, len(b.ops), maxOps)
	}
	if maxBytes := c.db.opts.MaxBatchBytes; b.bytes > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes of documents, more than the limit of %d", ErrBatchTooLarge, b.bytes, maxBytes)
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
