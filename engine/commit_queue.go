package engine

import "context"

// The commit queue. Requests wait in db.commit.queue, in the order they came; at
// most one writer at a time leads: it runs groups off the front of the
// queue (runGroup) on its own goroutine. A writer that submits while
// somebody leads waits to be answered. The leader keeps leading until its
// own request is answered, and then, if others wait, passes the lead to
// the writer at the front of the queue, so that no writer leads for long
// while its own call has long been answered; when nobody waits, nobody
// leads. The leader's record of handed groups (db.pipe) passes with the
// lead, under db.commit.

// submit queues req and returns once it is answered (r.err holds the
// outcome), leading the queue meanwhile if nobody does. It fails, with
// nothing done, only when req is not accepted: ctx has ended, or the DB is
// closed or read-only. Once accepted a request is always answered, also
// while the DB closes.
func (db *DB) submit(ctx context.Context, req *commitReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Close takes submitMu for writing before it waits for the queue to
	// empty, so a request queued under the read lock is always run.
	db.submitMu.RLock()
	if err := db.writable(); err != nil {
		db.submitMu.RUnlock()
		return err
	}
	db.commit.Lock()
	db.commit.queue = append(db.commit.queue, req)
	lead := !db.commit.leading
	db.commit.leading = true
	db.commit.Unlock()
	db.submitMu.RUnlock()
	for {
		if lead {
			db.lead(req)
		}
		if <-req.wake == reqFinished {
			return nil
		}
		lead = true // reqLead: the leader before passed the lead on
	}
}

// lead runs groups off the queue until own is answered or the queue is
// empty, then passes the lead to the writer at the front, or, with nobody
// waiting, lets it lapse. own is the leader's own request, which is in the
// queue or answered.
func (db *DB) lead(own *commitReq) {
	var pending []*commitReq
	for {
		db.waitTaken(db.pipe.handed)
		db.commit.Lock()
		n := min(len(db.commit.queue), maxGroupRequests)
		pending = append(pending[:0], db.commit.queue[:n]...)
		db.commit.queue = db.commit.queue[n:]
		db.commit.Unlock()

		rest := db.runGroup(&db.pipe, pending)

		db.commit.Lock()
		if len(rest) > 0 {
			// Not run yet (they wait for an item's earlier write, or come
			// after a control): they stay at the front.
			db.commit.queue = append(rest[:len(rest):len(rest)], db.commit.queue...)
		}
		switch {
		case len(db.commit.queue) == 0:
			db.commit.queue = nil // let the backing array go
			db.commit.leading = false
			db.commit.idle.Broadcast()
			db.commit.Unlock()
			return
		case len(own.wake) > 0 && db.commit.queue[0] != own:
			// Answered (its signal waits in wake): lead no longer.
			db.commit.queue[0].wake <- reqLead
			db.commit.Unlock()
			return
		}
		db.commit.Unlock()
	}
}

// queueEmpty reports whether no request waits in the queue.
func (db *DB) queueEmpty() bool {
	db.commit.Lock()
	defer db.commit.Unlock()
	return len(db.commit.queue) == 0
}

// waitQueueIdle waits until nobody leads the queue; once the DB is closed
// to new requests, that is when every accepted request has been run.
func (db *DB) waitQueueIdle() {
	db.commit.Lock()
	for db.commit.leading {
		db.commit.idle.Wait()
	}
	db.commit.Unlock()
}
