package engine

import (
	"errors"
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// Errors returned by ebb. They are sentinels: match them with errors.Is, since
// every error that reaches a caller is wrapped with the detail that caused it
// (the container, the item id, the offending value).

// Errors about items and containers that are, or are not, there.
var (
	// ErrNotFound: the container or item does not exist, was deleted, or has
	// expired.
	ErrNotFound = errors.New("ebb: not found")
	// ErrConflict: Create of an id that a live item already has, or
	// CreateContainer of an id already in use.
	ErrConflict = errors.New("ebb: conflict")
	// ErrPreconditionFailed: an IfMatch etag does not match the item's
	// current etag.
	ErrPreconditionFailed = errors.New("ebb: precondition failed")
)

// Errors about bad input. Nothing is written when one is returned.
var (
	// ErrInvalidTTL: an item's ttl property is not -1 or an integer in
	// 1..2147483647.
	ErrInvalidTTL = policy.ErrInvalidTTL
	// ErrInvalidDocument: the body is not a JSON object, lacks a valid id, or
	// is larger than MaxDocumentSize.
	ErrInvalidDocument = errors.New("ebb: invalid document")
	// ErrInvalidProperties: container properties that break a rule: an empty
	// or malformed id, a DefaultTTL of 0 or below -1, TTL together with
	// IndexingNone, a changed id in SetProperties.
	ErrInvalidProperties = errors.New("ebb: invalid container properties")
	// ErrBatchTooLarge: a batch holds more operations or more bytes of
	// documents than its limits (Options.MaxBatchOperations and
	// MaxBatchBytes, by default 100 operations and 2 MiB, as in Cosmos
	// DB). The error names the limit and the count.
	ErrBatchTooLarge = errors.New("ebb: batch too large")
	// ErrEmptyBatch: ExecuteBatch was given a nil batch or one without
	// operations.
	ErrEmptyBatch = errors.New("ebb: empty batch")
	// ErrInvalidOptions: Open (or ResetClock) was given Options with a
	// value outside what its field allows. The error names every such field
	// and its value; nothing is opened or written.
	ErrInvalidOptions = errors.New("ebb: invalid options")
)

// Errors of ChangeFeed's options. Cosmos DB answers 400 to both.
var (
	// ErrFeedRetention: a ChangeFeed in AllVersionsAndDeletes mode was
	// asked of a container whose ChangeFeedRetention is 0, or from a
	// continuation older than the retention (its changes may be gone).
	ErrFeedRetention = errors.New("ebb: change feed retention")
	// ErrInvalidFeedOptions: ChangeFeedOptions with an unknown Mode, or a
	// Continuation that is malformed or another container's (the error
	// says which).
	ErrInvalidFeedOptions = errors.New("ebb: invalid change feed options")
)

// Errors about the database itself.
var (
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("ebb: database closed")
	// ErrReadOnly: a journal write or fsync failed, so what reached the
	// disk is unknown (the request that hit it gets this error too, with
	// the cause). The DB refuses writes from then on, while reads, queries,
	// Items and Stats go on from memory and segment files; Close it and
	// Open it again, once the fault is gone, to recover every acknowledged
	// write (with Options.NoSync, every write that reached the journal).
	ErrReadOnly = errors.New("ebb: writes refused after a journal I/O failure; reopen to recover")
	// ErrCorrupt: bytes on disk fail their checksum or cannot be decoded.
	// ebb never returns wrong data in its place and never skips it silently.
	ErrCorrupt = segment.ErrCorrupt
	// ErrLocked: another DB handle, in this process or another, has the
	// directory open.
	ErrLocked = errors.New("ebb: database directory is locked by another handle")
)

// ErrNoDatabase: Open was given an empty path or a directory that has no
// MANIFEST and holds files ebb did not create; it writes nothing then. The
// offline tools (package engine/tool) return it for a directory that
// does not exist, is not a directory, is empty or holds no ebb database.
var ErrNoDatabase = dbfile.ErrNoDatabase

// itemNotFound is the ErrNotFound of a read of an item that is not there:
// its message is formatted only when asked for, since a read that misses
// is as common as one that hits and should cost about as little.
type itemNotFound struct{ id, container string }

func (e *itemNotFound) Error() string {
	return fmt.Sprintf("%v: item %s in container %q", ErrNotFound, showItem(e.id), e.container)
}

func (e *itemNotFound) Unwrap() error { return ErrNotFound }
