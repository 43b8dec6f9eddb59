package engine

import "fmt"

// The second stage of the commit pipeline (see commit.go): the apply loop
// takes the groups the commit leader wrote to the journal, makes them durable
// with one fsync for every group waiting (none with Options.NoSync), then
// applies them in order and answers their writers. It is the only
// goroutine that changes which items exist.

// commitGroup is a group of requests written to the journal as consecutive
// entries, the last of which has seq last.
type commitGroup struct {
	reqs []*commitReq
	last uint64
}

// writtenQueue is the capacity of db.written. The commit leader hands a group
// only once the apply loop has taken the one before (waitTaken), so at most
// one group waits there.
const writtenQueue = 1

// applyLoop runs until Close closes db.written (once nobody leads the
// commit queue), applying every group handed to it first.
func (db *DB) applyLoop() {
	defer db.workers.Done()
	var batch []*commitGroup
	for g := range db.written {
		batch = append(batch[:0], g)
	more:
		for {
			select {
			case g, ok := <-db.written:
				if !ok {
					break more
				}
				batch = append(batch, g)
			default:
				break more
			}
		}
		db.takeGroups(batch...)
		db.applyGroups(batch)
	}
}

// takeGroups records that the groups are taken for applying (waitTaken).
func (db *DB) takeGroups(batch ...*commitGroup) {
	db.progress.Lock()
	db.progress.taken = batch[len(batch)-1].last
	db.progress.cond.Broadcast()
	db.progress.Unlock()
}

// applyGroups makes the groups durable, applies and answers them.
func (db *DB) applyGroups(batch []*commitGroup) {
	last := batch[len(batch)-1].last
	var err error
	if !db.opts.NoSync {
		err = db.jnl.SyncTo(last)
	}
	if err == nil {
		if f := db.failure.Load(); f != nil {
			err = *f // a later group's write failed: the journal's state is unknown
		}
	}
	if err != nil {
		db.fail(err)
		n := 0
		for _, g := range batch {
			n += len(g.reqs)
		}
		err = fmt.Errorf("ebb: %d writes not committed: %w: %w", n, ErrReadOnly, err)
	}
	for _, g := range batch {
		for _, r := range g.reqs {
			if err != nil {
				r.finish(err)
				continue
			}
			r.c.apply(r)
			r.finish(nil)
		}
	}
	db.progress.Lock()
	db.progress.applied = last
	db.progress.cond.Broadcast()
	db.progress.Unlock()
	if db.memBytes.Load() >= db.opts.SealThreshold {
		db.kickSeal()
	}
}

// appliedThrough returns the last seq the apply loop has applied (or
// failed).
func (db *DB) appliedThrough() uint64 {
	db.progress.Lock()
	defer db.progress.Unlock()
	return db.progress.applied
}

// waitApplied waits until the apply loop has applied (or failed) every
// entry up to seq.
func (db *DB) waitApplied(seq uint64) {
	db.progress.Lock()
	defer db.progress.Unlock()
	for db.progress.applied < seq {
		db.progress.cond.Wait()
	}
}

// waitTaken waits until the apply loop has taken every group up to seq off
// db.written. The commit leader waits so before it builds a group: the fsync
// of the groups taken then runs while it validates, encodes and writes the
// next, and the requests that arrive meanwhile make that group larger, so
// that each fsync (and each write to the journal) covers as many writes as
// came in during the one before.
func (db *DB) waitTaken(seq uint64) {
	db.progress.Lock()
	defer db.progress.Unlock()
	for db.progress.taken < seq {
		db.progress.cond.Wait()
	}
}
