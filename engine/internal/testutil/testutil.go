// Package testutil holds the helpers that both kinds of engine tests use:
// the white-box tests in package engine and the black-box ones in package
// engine_test, which cannot share test files. It must not import the
// engine.
package testutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Clock is a wall clock that tests move by hand, in whole seconds.
type Clock struct{ sec atomic.Int64 }

// NewClock returns a Clock at sec (Unix seconds).
func NewClock(sec int64) *Clock {
	c := &Clock{}
	c.sec.Store(sec)
	return c
}

func (c *Clock) Now() time.Time    { return time.Unix(c.sec.Load(), 0) }
func (c *Clock) Set(sec int64)     { c.sec.Store(sec) }
func (c *Clock) Advance(d int64)   { c.sec.Add(d) }
func (c *Clock) Unix() (sec int64) { return c.sec.Load() }

// CopyDir copies the regular files under from to to, creating to's
// directories. A file that disappears meanwhile (a temporary file renamed)
// is skipped, so a database can be copied while it runs.
func CopyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file renamed meanwhile
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// MustCopyDir replaces to with a copy of from, failing t on an error, and
// returns to.
func MustCopyDir(t testing.TB, from, to string) string {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if err := CopyDir(from, to); err != nil {
		t.Fatal(err)
	}
	return to
}

// AtomicMax raises a to v if v is larger.
func AtomicMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
