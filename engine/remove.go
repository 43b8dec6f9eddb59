package engine

import "time"

// Removal of segment files that no MANIFEST names any more (dropped whole,
// rewritten, or of a deleted container). Unlinking is cheap for one file,
// but an expiry storm drops a hundred at once, and a file system fsync of
// a writer's journal entry then waits for the journal commit that frees
// all of them. So the removal loop unlinks them a few milliseconds apart,
// in the background; an explicit Compact waits for it (waitRemovals), so
// that the space is back when Compact returns. A file not yet unlinked
// when the process stops is an orphan, which the next Open removes.

// removePace is the pause between two unlinks.
const removePace = 5 * time.Millisecond

// removeQueue bounds the files waiting: past it, files are unlinked at
// once by whoever drops them.
const removeQueue = 4096

// removal is a file for the removal loop to unlink, or, with done set, a
// request to be told (by closing done) once every file queued before it is
// unlinked.
type removal struct {
	f    *segFile
	done chan struct{}
}

// removeLater hands files to the removal loop, with their references (the
// container's); the files must already be out of every container's map.
func (db *DB) removeLater(files ...*segFile) {
	for _, f := range files {
		select {
		case <-db.quit:
			f.remove() // closing: the loop may be gone
			continue
		default:
		}
		select {
		case db.removals <- removal{f: f}:
		default:
			f.remove() // the queue is full
		}
	}
}

// waitRemovals waits until every file handed to removeLater before the call
// is unlinked.
func (db *DB) waitRemovals() {
	done := make(chan struct{})
	select {
	case db.removals <- removal{done: done}:
	case <-db.quit:
		return
	}
	select {
	case <-done:
	case <-db.quit:
	}
}

// removeWaiting unlinks the files still queued; the loop calls it when the
// DB closes, and Close once every worker has stopped.
func (db *DB) removeWaiting() {
	for {
		select {
		case r := <-db.removals:
			r.do()
		default:
			return
		}
	}
}

func (r removal) do() {
	if r.f != nil {
		r.f.remove()
	}
	if r.done != nil {
		close(r.done)
	}
}

// removeLoop unlinks the files handed to removeLater, removePace apart.
func (db *DB) removeLoop() {
	defer db.workers.Done()
	pace := time.NewTimer(0)
	defer pace.Stop()
	for {
		select {
		case r := <-db.removals:
			r.do()
			if r.f == nil {
				continue // a barrier: no pause
			}
		case <-db.quit:
			db.removeWaiting()
			return
		}
		pace.Reset(removePace)
		select {
		case <-pace.C:
		case <-db.quit:
		}
	}
}
