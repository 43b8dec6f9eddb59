package compactor

import (
	"context"
	"fmt"
	"os"

	"github.com/ebbdb/ebb/segment"
)

// Moved says where a kept record went.
type Moved struct {
	ID     string
	Seq    uint64
	File   uint32
	Handle segment.Handle
}

// Output creates the files a rewrite writes into.
type Output struct {
	// Create makes a new, empty segment file and returns its number and path.
	Create func() (w *segment.Writer, num uint32, path string, err error)
	// MaxFileBytes ends a file and starts another once this many bytes are
	// written. Zero means one file.
	MaxFileBytes int64
}

// Result is what a rewrite produced.
type Result struct {
	Files     []uint32 // new files, finished and fsynced
	Moved     []Moved  // every kept record's new place
	ReadBytes int64    // record bytes read from the sources
	Written   int64    // bytes of the new files
}

// Rewrite copies every record of srcs for which keep returns true into new
// files made by out.Create, in source order. On error or cancellation it
// removes what it wrote and returns the error; the sources are never
// changed. The caller fsyncs the directory and swaps the files in.
func Rewrite(ctx context.Context, srcs []*segment.Reader, keep func(*segment.Record) bool, out Output) (res Result, err error) {
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
			res.ReadBytes += int64(segment.RecordSize(rec))
			if !keep(rec) {
				continue
			}
			if w == nil {
				var path string
				if w, num, path, err = out.Create(); err != nil {
					return res, fmt.Errorf("compactor: create output: %w", err)
				}
				abandon = append(abandon, func() error { return os.Remove(path) })
			}
			h, err := w.Add(rec)
			if err != nil {
				return res, fmt.Errorf("compactor: write: %w", err)
			}
			res.Moved = append(res.Moved, Moved{ID: rec.ID, Seq: rec.Seq, File: num, Handle: h})
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
