package compactor

import (
	"context"
	"fmt"

	"github.com/ebbdb/ebb/segment"
)

// Decision is what a rewrite does with one record.
type Decision uint8

const (
	// Drop leaves the record out: nothing needs it.
	Drop Decision = iota
	// Keep copies the record as it is: the live, newest version of an item.
	Keep
	// KeepTombstone writes a tombstone in its place (same id and sequence):
	// the record is dead, but an older version of its id may still be on
	// disk elsewhere and must stay hidden.
	KeepTombstone
)

// Moved says where a kept record (or the tombstone written for it) went.
type Moved struct {
	ID     string
	Seq    uint64
	Op     segment.Op
	File   uint32
	Handle segment.Handle
}

// Output creates the files a rewrite writes into.
type Output struct {
	// Create makes a new, empty segment file and returns its number and path.
	Create func() (w *segment.Writer, num uint32, path string, err error)
	// Remove removes a file Create made, when a later step of the rewrite
	// fails. It is the caller's file system (the engine's Options.FS): the
	// compactor does no file operation of its own.
	Remove func(path string) error
	// MaxFileBytes ends a file and starts another once this many bytes are
	// written. Zero means one file.
	MaxFileBytes int64
	// Throttle, if set, is called with the bytes of each record read, and
	// blocks to keep compaction within its I/O budget.
	Throttle func(ctx context.Context, n int) error
}

// Result is what a rewrite produced.
type Result struct {
	Files      []uint32 // new files, finished and fsynced
	Moved      []Moved  // every record written, with its new place
	ReadBytes  int64    // record bytes read from the sources
	Written    int64    // bytes of the new files
	Tombstones int64    // tombstones written in place of dead records
}

// Rewrite copies the records of srcs that decide keeps into new files made
// by out.Create, in source order. On error or cancellation it
// removes what it wrote (aborting the open writer, and out.Remove for the
// files finished) and returns the error; the sources are never
// changed. The caller fsyncs the directory and swaps the files in.
func Rewrite(ctx context.Context, srcs []*segment.Reader, decide func(*segment.Record) Decision, out Output) (res Result, err error) {
	var w *segment.Writer
	var num uint32
	var finished []uint32
	var abandon []func() error
	defer func() {
		if err != nil {
			if w != nil {
				w.Abort()
			}
			for _, f := range abandon {
				f()
			}
			res = Result{}
		}
	}()
	finish := func() error {
		st, err := w.Finish()
		if err != nil {
			return err
		}
		res.Written += st.FileBytes
		finished = append(finished, num)
		w = nil
		return nil
	}
	for _, src := range srcs {
		for ra, rerr := range src.Records() {
			if rerr != nil {
				return res, fmt.Errorf("compactor: read %s: %w", src.Path(), rerr)
			}
			if err := ctx.Err(); err != nil {
				return res, err
			}
			rec := &ra.Record
			n := segment.RecordSize(rec)
			res.ReadBytes += int64(n)
			if out.Throttle != nil {
				if err := out.Throttle(ctx, n); err != nil {
					return res, err
				}
			}
			switch decide(rec) {
			case Drop:
				continue
			case KeepTombstone:
				if rec.Op == segment.OpPut {
					*rec = segment.Record{Op: segment.OpDelete, Container: rec.Container, Seq: rec.Seq, TS: rec.TS, ID: rec.ID}
				}
				res.Tombstones++
			}
			if w == nil {
				var path string
				if w, num, path, err = out.Create(); err != nil {
					return res, fmt.Errorf("compactor: create output: %w", err)
				}
				abandon = append(abandon, func() error { return out.Remove(path) })
			}
			h, err := w.Add(rec)
			if err != nil {
				return res, fmt.Errorf("compactor: write: %w", err)
			}
			res.Moved = append(res.Moved, Moved{ID: rec.ID, Seq: rec.Seq, Op: rec.Op, File: num, Handle: h})
			if out.MaxFileBytes > 0 && w.Size() >= out.MaxFileBytes {
				if err := finish(); err != nil {
					return res, fmt.Errorf("compactor: finish output: %w", err)
				}
			}
		}
	}
	if w != nil {
		if err := finish(); err != nil {
			return res, fmt.Errorf("compactor: finish output: %w", err)
		}
	}
	res.Files = finished
	return res, nil
}
