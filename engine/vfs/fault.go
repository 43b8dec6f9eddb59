package vfs

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Rule says which operations a FaultFS fails, and with what.
type Rule struct {
	// Op is the operation to fail; 0 matches every operation.
	Op Op
	// Path is a substring of the slash-separated path ("journal/", "seg/",
	// "MANIFEST", "CLOCK"); "" matches every path.
	Path string
	// Err is the cause returned, wrapped in an *fs.PathError: a
	// syscall.Errno such as syscall.ENOSPC or syscall.EIO, or any error.
	// nil means syscall.EIO.
	Err error
	// Skip lets this many matching calls through before the rule fires.
	Skip int
	// Count is how many calls the rule fails before it retires; 0 means
	// every matching call until Clear.
	Count int
	// Prob fails each matching call with this probability (after Skip);
	// 0 means always.
	Prob float64
	// Partial makes a failed write write the first half of its bytes
	// before it fails, as a disk that fills up mid-write does.
	Partial bool
}

// FaultFS wraps an FS and fails the operations its rules match, on files and
// through the journal's Hook alike. Rules can be added and cleared while the
// engine runs; FaultFS counts the faults it injected per operation. It is
// safe for concurrent use.
type FaultFS struct {
	base  FS
	armed atomic.Bool // any rule active: the fast path skips the lock
	mu    sync.Mutex
	rules []*ruleState
	rnd   *rand.Rand
	count [numOps]atomic.Int64
}

type ruleState struct {
	Rule
	seen, failed int
}

// NewFaultFS returns a FaultFS over base (OS if nil) with no rule; seed
// drives the probabilistic rules.
func NewFaultFS(base FS, seed uint64) *FaultFS {
	return &FaultFS{base: Default(base), rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Inject adds a rule.
func (f *FaultFS) Inject(r Rule) {
	if r.Err == nil {
		r.Err = syscall.EIO
	}
	f.mu.Lock()
	f.rules = append(f.rules, &ruleState{Rule: r})
	f.armed.Store(true)
	f.mu.Unlock()
}

// Clear removes every rule: the faults clear.
func (f *FaultFS) Clear() {
	f.mu.Lock()
	f.rules = nil
	f.armed.Store(false)
	f.mu.Unlock()
}

// Injected returns how many faults were injected for op (every op if 0).
func (f *FaultFS) Injected(op Op) int64 {
	if op != 0 {
		return f.count[op].Load()
	}
	var n int64
	for i := range f.count {
		n += f.count[i].Load()
	}
	return n
}

// Counts returns the faults injected so far, per operation, leaving out
// operations with none.
func (f *FaultFS) Counts() map[Op]int64 {
	out := make(map[Op]int64)
	for _, op := range Ops() {
		if n := f.count[op].Load(); n > 0 {
			out[op] = n
		}
	}
	return out
}

// fault returns the rule that fails op on path now, or nil.
func (f *FaultFS) fault(op Op, path string) *Rule {
	if !f.armed.Load() {
		return nil
	}
	p := filepath.ToSlash(path)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if (r.Op != 0 && r.Op != op) || !strings.Contains(p, r.Path) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Prob > 0 && f.rnd.Float64() >= r.Prob) {
			continue
		}
		r.failed++
		if r.Count > 0 && r.failed >= r.Count {
			f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			f.armed.Store(len(f.rules) > 0)
		}
		f.count[op].Add(1)
		rule := r.Rule
		return &rule
	}
	return nil
}

// check returns the injected error for op on path, or nil.
func (f *FaultFS) check(op Op, path string) error {
	if r := f.fault(op, path); r != nil {
		return injected(op, path, r.Err)
	}
	return nil
}

func injected(op Op, path string, cause error) error {
	return &fs.PathError{Op: "injected " + op.String(), Path: path, Err: cause}
}

// Before implements Hook: it fails op on path if a rule says so.
func (f *FaultFS) Before(op Op, path string) error { return f.check(op, path) }

// Synced implements Hook; FaultFS has nothing to record.
func (f *FaultFS) Synced(string, int64) {}

func (f *FaultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := OpOpen
	if flag&writeFlags != 0 {
		op = OpCreate
	}
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, name: name, fs: f}, nil
}

func (f *FaultFS) Open(name string) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, name: name, fs: f}, nil
}

func (f *FaultFS) ReadFile(name string) ([]byte, error) {
	if err := f.check(OpRead, name); err != nil {
		return nil, err
	}
	return f.base.ReadFile(name)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, newname); err != nil {
		return err
	}
	return f.base.Rename(oldname, newname)
}

func (f *FaultFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.base.Remove(name)
}

func (f *FaultFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := f.check(OpMkdir, dir); err != nil {
		return err
	}
	return f.base.MkdirAll(dir, perm)
}

func (f *FaultFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := f.check(OpReadDir, dir); err != nil {
		return nil, err
	}
	return f.base.ReadDir(dir)
}

func (f *FaultFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.base.Stat(name)
}

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return err
	}
	return f.base.SyncDir(dir)
}

// faultFile is a File of a FaultFS.
type faultFile struct {
	File
	name string
	fs   *FaultFS
}

func (f *faultFile) Write(b []byte) (int, error) {
	if r := f.fs.fault(OpWrite, f.name); r != nil {
		n := 0
		if r.Partial && len(b) > 1 {
			n, _ = f.File.Write(b[:len(b)/2])
		}
		return n, injected(OpWrite, f.name, r.Err)
	}
	return f.File.Write(b)
}

func (f *faultFile) Read(b []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(b)
}

func (f *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.check(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// writeFlags are the open flags that make an open a create: any
// that writes.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND
