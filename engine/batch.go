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
	// part is the partition the batch was made for (Partition.NewBatch),
	// or nil: a batch for a container without a partition key.
	part *Partition
}

// NewBatch returns an empty batch bounded by the DB's
// Options.MaxBatchOperations and MaxBatchBytes. It only builds a value, so
// it answers after Close too; ExecuteBatch then returns ErrClosed.
//
// On a container with a partition key path, ExecuteBatch refuses it with
// ErrInvalidPartitionKey: use Container.Partition(key).NewBatch.
func (c *Container) NewBatch() *Batch { return c.newBatch() }

func (c *Container) newBatch() *Batch {
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
		b.err = &BatchError{Index: len(b.ops), Err: fmt.Errorf("delete: %w: %w", ErrInvalidDocument, err)}
		return b
	}
	o := op{kind: opDelete, id: id}
	if b.part != nil {
		o.id = b.part.key(id)
	}
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
	var (
		o   op
		err error
	)
	if b.part != nil {
		o, err = newKeyedOp(kind, doc, opts, b.part.c.kp, &b.part.pk)
	} else {
		o, err = newOp(kind, doc, opts)
	}
	if err != nil {
		b.err = &BatchError{Index: len(b.ops), Err: fmt.Errorf("%s: %w", kind, err)}
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

// BatchError is the error of a batch one of whose operations failed: Index
// is the operation's place in the batch (from 0), Err its error. Unwrap
// returns Err, so errors.Is(err, ErrConflict) and the like still work.
// Nothing of the batch is written.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("batch operation %d: %v", e.Index, e.Err) }

// Unwrap returns Err.
func (e *BatchError) Unwrap() error { return e.Err }

// ExecuteBatch commits every operation of b, or none. It returns one Item
// per operation (the zero Item for deletes). When one operation fails,
// nothing is written and the error is a *BatchError naming it (an invalid
// document or id, a conflict, a missing item, a failed IfMatch, an item
// written twice). A nil or empty batch is refused with ErrEmptyBatch, and
// one beyond the DB's limits (Options MaxBatchOperations and
// MaxBatchBytes) with ErrBatchTooLarge.
//
// On a container with a partition key path, the batch must come from
// Container.Partition(key).NewBatch (every operation in that partition);
// any other fails with ErrInvalidPartitionKey, as does a batch made for a
// partition of another container.
func (c *Container) ExecuteBatch(ctx context.Context, b *Batch) ([]Item, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: ExecuteBatch on container %q was given a nil batch", ErrEmptyBatch, c.id)
	}
	switch {
	case b.part != nil && b.part.c != c:
		return nil, fmt.Errorf("%w: ExecuteBatch on container %q was given a batch made for a partition of container %q", ErrInvalidPartitionKey, c.id, b.part.c.id)
	case b.part != nil && b.part.err != nil:
		return nil, b.part.err
	case b.part == nil && c.kp != nil:
		return nil, c.needKey("NewBatch")
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
			return nil, &BatchError{Index: i, Err: fmt.Errorf("%w: batch operations %d and %d both write item %s", ErrInvalidDocument, j, i, showItem(o.id))}
		}
		seen[o.id] = i
	}
	return c.commit(ctx, b.ops, true)
}
