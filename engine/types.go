package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/policy"
)

// TTL returns a pointer to n, for ContainerProperties.DefaultTTL:
// engine.TTL(3600) expires items an hour after their last write,
// engine.TTL(-1) turns TTL on without a default.
func TTL(n int32) *int32 { return &n }

// IndexingMode is a container's indexing policy mode, as in Cosmos DB. TTL
// needs a container whose mode is consistent or lazy.
type IndexingMode uint8

const (
	// IndexingConsistent (the zero value) keeps indexes up to date with
	// every write, as queries see them: a query sees every write that
	// returned before it started.
	IndexingConsistent IndexingMode = iota
	// IndexingLazy updates indexes in the background.
	IndexingLazy
	// IndexingNone keeps no index; TTL cannot be turned on.
	IndexingNone
)

// String is "consistent", "lazy" or "none", the names the MANIFEST's
// readers (package engine/tool) report too.
func (m IndexingMode) String() string { return dbfile.IndexingName(uint8(m)) }

// ContainerProperties are a container's settings.
type ContainerProperties struct {
	// ID names the container: 1 to 255 characters without / \ ? # or a
	// control character (U+0000 to U+001F).
	ID string
	// DefaultTTL is nil (TTL off), -1 (TTL on, items live until their own
	// ttl says otherwise) or n seconds in 1..2147483647 (items expire n
	// seconds after their last write unless their own ttl says otherwise).
	DefaultTTL *int32
	// Indexing is the indexing mode.
	Indexing IndexingMode
	// IncludedPaths and ExcludedPaths choose the paths that consistent and
	// lazy indexing keep, in Cosmos DB's indexing-policy syntax: "/*" (every
	// path), "/name/?" (the scalar at name), "/address/*" (everything under
	// address), "/tags/[]/?" (the scalars in the array tags). The most
	// specific path wins; on a tie, excluded wins. Both empty: every path
	// but "/_etag/?" is indexed.
	IncludedPaths []string
	ExcludedPaths []string
	// ChangeFeedRetention is how long the versions, deletes and expiries
	// that ChangeFeed's AllVersionsAndDeletes mode reads are kept (counted
	// back from now, in whole seconds, rounded up); 0 turns that mode off
	// and keeps only what reads need, as without a change feed. It cannot be
	// negative. Turned on for a container that has items, the feed covers
	// the changes from the next second on. The LatestVersion mode works
	// either way.
	ChangeFeedRetention time.Duration
	// PartitionKeyPath is the container's partition key path, as in Cosmos
	// DB ("/tenant", "/address/city"); "" means no key: items are
	// identified by id alone. With a key, an item's identity is its key
	// value (the document's value at the path, or None when it has none)
	// and its id: two items may share an id under different key values,
	// and point calls name both (Container.Partition). One path only:
	// hierarchical keys are refused. It cannot change after creation.
	PartitionKeyPath string
}

func (p ContainerProperties) validate() error {
	if err := validateID(p.ID); err != nil {
		return fmt.Errorf("%w: container id: %v", ErrInvalidProperties, err)
	}
	if p.Indexing > IndexingNone {
		return fmt.Errorf("%w: container %q: indexing mode %d is not consistent, lazy or none", ErrInvalidProperties, p.ID, p.Indexing)
	}
	if p.DefaultTTL != nil {
		if err := policy.ValidateDefaultTTL(int64(*p.DefaultTTL)); err != nil {
			return fmt.Errorf("%w: container %q: %w", ErrInvalidProperties, p.ID, err)
		}
		if p.Indexing == IndexingNone {
			return fmt.Errorf("%w: container %q: defaultTtl %d needs indexing mode consistent or lazy, not none", ErrInvalidProperties, p.ID, *p.DefaultTTL)
		}
	}
	if _, err := parseKeyPath(p.ID, p.PartitionKeyPath); err != nil {
		return err
	}
	if p.ChangeFeedRetention < 0 {
		return fmt.Errorf("%w: container %q: changeFeedRetention %v is negative (0 turns it off)", ErrInvalidProperties, p.ID, p.ChangeFeedRetention)
	}
	return p.validatePaths()
}

func (p ContainerProperties) clone() ContainerProperties {
	if p.DefaultTTL != nil {
		p.DefaultTTL = TTL(*p.DefaultTTL)
	}
	p.IncludedPaths = slices.Clone(p.IncludedPaths)
	p.ExcludedPaths = slices.Clone(p.ExcludedPaths)
	return p
}

// Item is one stored item as a read or write returns it.
type Item struct {
	// ID is the item's id.
	ID string
	// TS is the item's _ts: unix seconds of its last write.
	TS int64
	// ETag is the item's _etag; it changes with every write. Pass it to
	// IfMatch for optimistic concurrency.
	ETag string
	// ExpiresAt is the unix second from which the item is expired, as the
	// container's policy stood when the item was read or written: its _ts
	// plus its effective ttl (the item's own ttl, else the container's
	// DefaultTTL). It is 0 when the item never expires under that policy.
	// A later SetProperties may change it; the next read says so.
	ExpiresAt int64
	// Body is the stored JSON object with the system properties id, _ts and
	// _etag. Property order is not preserved.
	Body []byte
	// PartitionKey is the item's partition key value: None in a container
	// without a partition key path.
	PartitionKey PartitionKey
}

// Stats describe a container's items at the moment of the call. Expired
// items never count toward Items or LiveBytes.
type Stats struct {
	// Items is the number of live items.
	Items int64
	// LiveBytes is the size of the live items' records, uncompressed.
	LiveBytes int64
	// DiskBytes is the size of the container's segment files plus its share
	// of every other file under the directory (the journal's files,
	// MANIFEST, CLOCK, LOCK, broken/, and any file ebb did not write),
	// divided evenly among the containers: the containers' DiskBytes add up
	// to the size of the files under the directory.
	DiskBytes int64
	// ExpiredPending is the number of expired items whose records are still
	// on disk, waiting for compaction.
	ExpiredPending int64
}

// WriteOption adjusts one write.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ifMatch  string
	omitBody bool
}

// IfMatch makes a write or delete conditional on the item's current etag:
// it fails with ErrPreconditionFailed when the etag differs.
func IfMatch(etag string) WriteOption {
	return func(o *writeOptions) { o.ifMatch = etag }
}

// OmitBody leaves the Body of the Item a write returns nil (its ID, TS,
// ETag and ExpiresAt are set as ever), as Cosmos DB's
// EnableContentResponseOnWrite = false and "Prefer: return=minimal" do: a
// writer that does not look at what it wrote saves rendering and copying
// the document. What is stored is the same either way.
func OmitBody() WriteOption {
	return func(o *writeOptions) { o.omitBody = true }
}
