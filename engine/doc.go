// Package engine is ebb's public API: an embedded document store whose
// items expire exactly as Azure Cosmos DB's time-to-live rules say.
//
// # Basics
//
//	db, err := engine.Open(dir, nil) // nil: defaults; &engine.Options{Clock: ...} to inject time
//	defer db.Close()
//	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions", DefaultTTL: engine.TTL(3600)})
//	it, err := c.Create(ctx, []byte(`{"id":"a","user":"x","ttl":60}`))
//	it, err = c.Read(ctx, "a") // ErrNotFound once _ts+60 <= now; it.ExpiresAt says when
//
// A container's DefaultTTL (nil, -1 or n seconds) and an item's own top-level
// "ttl" property decide when the item expires, counted from its last write
// (_ts): with DefaultTTL nil nothing expires; otherwise the item's ttl wins
// (-1: never, m: m seconds), and without one the DefaultTTL applies (-1:
// never, n: n seconds). Item.ExpiresAt is the resulting unix second, 0 for
// never. An expired item is invisible at once to every read, scan, count and
// statistic; its disk space comes back when compaction runs: the background
// compactor, which works in short steps that neither hold a lock a reader
// or writer waits on for long nor keep a processor from them, or
// Container.Compact, which removes every dead record now and leaves files
// without one as they are (it reads them through, to report damage). The
// examples show each call, expiry under a clock the caller moves among
// them.
//
// # Documents and batches
//
// A document is a JSON object of at most MaxDocumentSize bytes, not
// counting the system properties (_ts, _etag, _rid, _self, _attachments),
// so that what Read returns can always be written back. Its "id" is a
// string of 1 to 255 characters without / \ ? # or control characters.
// Numbers must fit a float64 and \u escapes of surrogates must come in
// pairs: whatever a write accepts, every read and query can decode. A
// Batch commits all of its operations or none; it holds at most
// Options.MaxBatchOperations operations and MaxBatchBytes bytes of
// documents (100 and 2 MiB by default, as in Cosmos DB).
//
// # Partition keys
//
//	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "orders", PartitionKeyPath: "/tenant"})
//	p := c.Partition(engine.StringKey("acme"))
//	it, err := p.Read(ctx, "o1") // the item (["acme"], "o1")
//
// A container with ContainerProperties.PartitionKeyPath identifies an item
// by its partition key value (the document's value at the path, None when
// it has none) and its id, as Cosmos DB does. Container.Partition scopes
// point calls, batches, queries and listings to one key value;
// Container.Create, Upsert and Replace take the key from the document,
// while Container.Read, Delete and NewBatch, which cannot, fail with
// ErrInvalidPartitionKey there. Container.Query and Items cover every
// partition, in key then id order. A container without a key path behaves
// as before; its one partition is NoneKey().
//
// # Durability
//
// Every write is appended to a journal (a folder named journal under dir) and
// fsynced before it is acknowledged; concurrent writers share fsyncs (group
// commit). Options.NoSync turns the fsync off. Journal records are sealed
// into compressed, checksummed segment files in the background. Open repairs
// a torn journal tail and reports any other damage as ErrCorrupt: ebb never
// returns wrong data and never skips damage silently.
//
// # Time
//
// The engine's clock never runs backwards: now is the larger of the wall
// clock and the floor, the highest time already observed, advanced by the
// real (monotonic) time elapsed since it was set. Close and a background
// tick (once a second) persist the floor, and it is made durable before any
// answer that relies on an item having expired goes out. So neither a clock
// found behind on the next Open nor a crash can bring back an item anyone
// saw expire; and a wall clock that was once far ahead does not freeze
// expiry, since time goes on from the floor at its real rate. ResetClock
// brings a database's clock back to the wall clock, removing first every
// version expired by the old one. Expiry is final: no later change of DefaultTTL revives an item
// that was expired at any instant.
//
// # Queries
//
//	for it, err := range c.Query(ctx, "SELECT * FROM c WHERE c.user = @u ORDER BY c.n DESC",
//		engine.Param{Name: "@u", Value: "x"}) { ... }
//
// Container.Query runs the Cosmos DB SQL subset of package query against the
// container's live items, served from in-memory secondary indexes kept as
// ContainerProperties.Indexing says (consistent: updated with every write;
// lazy: updated in the background; none: every query scans), and
// Container.Explain says how. Expired items are never in
// a result or a count.
//
// # Change feed
//
//	for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{
//		Mode: engine.AllVersionsAndDeletes, Continuation: saved, Follow: true}) { ... }
//
// Container.ChangeFeed reads a container's changes in order: in
// LatestVersion mode each live item at its newest version; in
// AllVersionsAndDeletes mode every create, replace and delete, and every
// expiry (a ChangeDelete with TTLExpired) at the instant the item expired,
// for as long as ContainerProperties.ChangeFeedRetention says. Each change
// carries a Continuation to resume strictly after it; a change is reported
// only once it is durable, and in the same place, with the same LSN, in
// every read, across restarts, crashes and compactions.
//
// # Failures
//
// An I/O error in the journal fails the writes it carried with an error
// wrapping ErrReadOnly and the cause; the DB then refuses writes and keeps
// serving reads until it is reopened. Seals and compactions that fail leave
// everything as it was and are retried. Options.FS (package vfs) injects
// faults and power cuts in tests.
//
// # Caveats
//
// Items iterates a snapshot of ids taken when it starts and reads each item
// as it yields it. Stats.LiveBytes counts records uncompressed while
// Stats.DiskBytes counts file bytes, which are compressed. A directory may
// be open in one DB at a time (ErrLocked otherwise). After Close every call
// that can fail returns ErrClosed; Stats, Metrics and Containers return
// their zero value.
package engine
