package engine

import (
	"fmt"
	"sync"

	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/segment"
)

// The journal queue. With Options.NoSync the commit leader does not write
// its groups to the journal itself: it hands their payloads to the journal
// queue, applies them and answers their writers, and a goroutine of the
// queue's own compresses them (segment.AppendPayload) and writes them to
// the journal, in seq order, a batch of everything queued at a time.
//
// Why: tidwall/wal fsyncs every journal file it fills before it starts the
// next, whatever its own NoSync says, and on ext4 that fsync waits for the
// data of the other files written meanwhile (a seal's): about 5 ms, once
// per JournalSegmentSize of entries (seldom with NoSync's default size,
// which each seal's new file comes before). A leader that waited for it
// held up every writer; with 64 writers that was 17% of the time. The
// write system call, tidwall's copies and the payloads' compression leave
// the leader's serial path too.
//
// What it costs: a write is acknowledged before its entry reaches the
// operating system, so a crash of the process, not only of the machine,
// may lose the last acknowledged writes (at most journalQueueBytes of
// entries besides what the OS had not written back), and so may a failed
// journal write, which makes the DB read-only. The journal stays a prefix
// of the writes in seq order: what is lost is always the newest writes,
// each whole.
//
// Whatever relies on the journal holding every applied write drains the
// queue first: a control (a seal's freeze cycles the journal and records
// where replay starts), journalDurable (a seal or a compaction before its
// manifest write relies on the entries), and Close. Its lock is a leaf:
// nothing else is locked while it is held.

// journalQueueBytes bounds the bytes of plain records waiting in the
// journal queue: the commit leader waits before it queues more. It is what
// a process crash may lose beyond the operating system's cache under
// NoSync, and it is ample for the journal's slowest writes (a filled file's
// fsync) at full speed.
const journalQueueBytes = 1 << 20

// journalQueue writes the commit leader's payloads to the journal on a
// goroutine of its own (NoSync only).
type journalQueue struct {
	jnl  *journal.Journal
	fail func(error) // makes the DB read-only after a failed write

	mu   sync.Mutex
	cond sync.Cond // signals a push, a batch written, and close
	// queued holds the payloads waiting, back to back, and sizes their
	// lengths; spare and spareSizes are the buffers of the batch last
	// written, reused by the next swap.
	queued, spare     []byte
	sizes, spareSizes []int
	next              uint64 // the seq the next payload pushed gets
	written           uint64 // the last seq written to the journal (or failed)
	closed            bool
	done              chan struct{} // closed when the writing goroutine ends
	// beforeWrite, if set (by tests), runs before each batch is written.
	beforeWrite func()
}

// newJournalQueue starts a journal queue whose first payload gets the
// journal's next seq.
func newJournalQueue(jnl *journal.Journal, fail func(error)) *journalQueue {
	q := &journalQueue{jnl: jnl, fail: fail, next: jnl.NextSeq(), done: make(chan struct{})}
	q.written = q.next - 1
	q.cond.L = &q.mu
	go q.run()
	return q
}

// nextSeq returns the seq the next payload pushed will get.
func (q *journalQueue) nextSeq() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.next
}

// push queues payloads, each the plain records of one entry, as
// consecutive entries and returns the seq of the first. It copies them, and
// waits first while journalQueueBytes are queued.
func (q *journalQueue) push(payloads [][]byte) (first uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queued) >= journalQueueBytes {
		q.cond.Wait()
	}
	first = q.next
	for _, p := range payloads {
		q.queued = append(q.queued, p...)
		q.sizes = append(q.sizes, len(p))
	}
	q.next += uint64(len(payloads))
	q.cond.Broadcast()
	return first
}

// drain waits until every payload pushed so far is written to the journal
// (or its write failed, which fails the DB).
func (q *journalQueue) drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.written+1 < q.next {
		q.cond.Wait()
	}
}

// close drains the queue and stops its goroutine. No push may follow.
func (q *journalQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
	<-q.done
}

// run writes what is queued, a batch at a time, until close (after the
// last batch).
func (q *journalQueue) run() {
	defer close(q.done)
	var payloads [][]byte
	var stored []byte
	for {
		q.mu.Lock()
		for len(q.sizes) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.sizes) == 0 {
			q.mu.Unlock()
			return
		}
		buf, sizes, first := q.queued, q.sizes, q.written+1
		q.queued, q.sizes = q.spare[:0], q.spareSizes[:0]
		hook := q.beforeWrite
		q.mu.Unlock()
		if hook != nil {
			hook()
		}

		// Each payload is compressed here, off the writers' path, into
		// stored (that the journal copies before the next batch).
		payloads, stored = payloads[:0], stored[:0]
		off := 0
		for _, n := range sizes {
			start := len(stored)
			stored = segment.AppendPayload(stored, buf[off:off+n])
			payloads = append(payloads, stored[start:len(stored):len(stored)])
			off += n
		}
		got, err := q.jnl.Write(payloads...)
		if err == nil && got != first {
			err = fmt.Errorf("ebb: journal assigned seq %d, expected %d", got, first)
		}
		if err != nil {
			q.fail(fmt.Errorf("ebb: %d acknowledged writes (NoSync) not journaled: %w", len(sizes), err))
		}
		clear(payloads)
		last := first + uint64(len(sizes)) - 1
		if cap(buf) > maxRetainedScratch {
			buf, sizes = nil, nil
		}
		if cap(stored) > maxRetainedScratch {
			stored = nil
		}

		q.mu.Lock()
		q.written = last
		q.spare, q.spareSizes = buf, sizes
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}
