package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrCrashed is the cause of every operation of a CrashFS after Crash.
var ErrCrashed = errors.New("vfs: simulated power loss")

// CrashFS simulates power loss over a real folder. It passes every
// operation to the OS while it records what a power loss would keep:
//
//   - the data of a file up to its size at its last successful fsync (a
//     file's data reaches the disk only through File.Sync, or through the
//     journal's Hook.Synced);
//   - a folder entry (a file created, renamed or removed, a folder made)
//     only once its parent folder is fsynced (SyncDir).
//
// Files and folders present under the root when the CrashFS is made are
// taken as durable as they are. After Crash every operation fails with an
// error wrapping ErrCrashed (Close of a file still works, so that the
// engine can release what it holds); once the engine is closed, Apply
// rewrites the real folder to the durable state: entries that were not
// durable are undone (a replaced or removed file comes back from a hard
// link CrashFS kept), and every file is cut to its synced size or has its
// unsynced tail torn as Apply's mode says. Paths outside the root pass
// through unrecorded.
type CrashFS struct {
	root    string
	stash   string
	crashed atomic.Bool

	mu      sync.Mutex // guards what follows; held across metadata operations
	nextID  int
	live    map[string]*node // what is on the real disk now
	durable map[string]*node // what a power loss would keep
}

// node is a file or folder (an inode): the same node may be live at one
// path and durable at another, after an unsynced rename.
type node struct {
	id       int
	dir      bool
	synced   int64  // bytes of data that survive a power loss
	durables int    // durable entries naming the node
	stashed  string // a hard link (or copy) to its data once no live path names it
}

// NewCrashFS starts recording under root, a folder that exists (it may be
// empty). The stash of replaced files lives next to it, in root+".crashfs".
func NewCrashFS(root string) (*CrashFS, error) {
	root = filepath.Clean(root)
	c := &CrashFS{root: root, stash: root + ".crashfs", live: map[string]*node{}, durable: map[string]*node{}}
	if err := os.RemoveAll(c.stash); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.stash, 0o755); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := c.newNode(d.IsDir())
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n.synced = info.Size()
		}
		c.live[p] = n
		c.setDurable(p, n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vfs: crashfs: scan %s: %w", root, err)
	}
	return c, nil
}

func (c *CrashFS) newNode(dir bool) *node {
	c.nextID++
	return &node{id: c.nextID, dir: dir}
}

// tracked reports whether p is under the root; p is clean.
func (c *CrashFS) tracked(p string) bool {
	rel, err := filepath.Rel(c.root, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != ".."+string(filepath.Separator))
}

// Crash simulates the power loss: every later operation fails, and nothing
// more becomes durable.
func (c *CrashFS) Crash() {
	c.mu.Lock()
	c.crashed.Store(true)
	c.mu.Unlock()
}

// Crashed reports whether Crash was called.
func (c *CrashFS) Crashed() bool { return c.crashed.Load() }

func (c *CrashFS) failed(op Op, path string) error {
	if c.crashed.Load() {
		return &fs.PathError{Op: op.String(), Path: path, Err: ErrCrashed}
	}
	return nil
}

// setDurable makes n the durable node at p (nil: no durable entry).
func (c *CrashFS) setDurable(p string, n *node) {
	if old := c.durable[p]; old != nil {
		old.durables--
		if old.durables == 0 && old.stashed != "" && !c.isLive(old) {
			os.Remove(old.stashed)
			old.stashed = ""
		}
	}
	if n == nil {
		delete(c.durable, p)
		return
	}
	n.durables++
	c.durable[p] = n
}

func (c *CrashFS) isLive(n *node) bool {
	for _, m := range c.live {
		if m == n {
			return true
		}
	}
	return false
}

// unlinking is called before the live entry p of n goes away (removed or
// replaced by a rename): if a durable entry still names n, its data is kept
// in the stash for Apply.
func (c *CrashFS) unlinking(p string, n *node) error {
	if n == nil || n.dir || n.durables == 0 || n.stashed != "" {
		return nil
	}
	for q, m := range c.live {
		if m == n && q != p {
			return nil // still reachable elsewhere
		}
	}
	dst := filepath.Join(c.stash, strconv.Itoa(n.id))
	if err := os.Link(p, dst); err != nil {
		if err := copyFile(p, dst, -1); err != nil {
			return fmt.Errorf("vfs: crashfs: keep %s: %w", p, err)
		}
	}
	n.stashed = dst
	return nil
}

func (c *CrashFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := c.failed(OpCreate, name); err != nil {
		return nil, err
	}
	p := filepath.Clean(name)
	if !c.tracked(p) {
		return OS.OpenFile(name, flag, perm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	n := c.live[p]
	if n == nil {
		n = c.newNode(false)
		c.live[p] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.synced = 0
	}
	return &crashFile{File: f, fs: c, n: n, name: name}, nil
}

func (c *CrashFS) Open(name string) (File, error) {
	if err := c.failed(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, fs: c, name: name}, nil
}

func (c *CrashFS) ReadFile(name string) ([]byte, error) {
	if err := c.failed(OpRead, name); err != nil {
		return nil, err
	}
	return os.ReadFile(name)
}

func (c *CrashFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := c.failed(OpReadDir, dir); err != nil {
		return nil, err
	}
	return os.ReadDir(dir)
}

func (c *CrashFS) Stat(name string) (fs.FileInfo, error) {
	if err := c.failed(OpStat, name); err != nil {
		return nil, err
	}
	return os.Stat(name)
}

func (c *CrashFS) Rename(oldname, newname string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(OpRename, newname); err != nil {
		return err
	}
	op, np := filepath.Clean(oldname), filepath.Clean(newname)
	if c.tracked(np) {
		if err := c.unlinking(np, c.live[np]); err != nil {
			return err
		}
	}
	if err := os.Rename(oldname, newname); err != nil {
		return err
	}
	n := c.live[op]
	delete(c.live, op)
	if c.tracked(np) {
		if n == nil {
			n = c.newNode(false)
		}
		c.live[np] = n
	}
	return nil
}

func (c *CrashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(OpRemove, name); err != nil {
		return err
	}
	p := filepath.Clean(name)
	if err := c.unlinking(p, c.live[p]); err != nil {
		return err
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	delete(c.live, p)
	return nil
}

func (c *CrashFS) MkdirAll(dir string, perm fs.FileMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(OpMkdir, dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for p := filepath.Clean(dir); c.tracked(p) && c.live[p] == nil; p = filepath.Dir(p) {
		c.live[p] = c.newNode(true)
	}
	return nil
}

func (c *CrashFS) SyncDir(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(OpSyncDir, dir); err != nil {
		return err
	}
	if err := OS.SyncDir(dir); err != nil {
		return err
	}
	d := filepath.Clean(dir)
	for p, n := range c.live {
		if filepath.Dir(p) == d && c.durable[p] != n {
			c.setDurable(p, n)
		}
	}
	for p := range c.durable {
		if filepath.Dir(p) == d && c.live[p] == nil {
			c.setDurable(p, nil)
		}
	}
	return nil
}

// Before implements Hook for the journal's tidwall files: it fails every
// operation after Crash, and records a file tidwall is about to create.
func (c *CrashFS) Before(op Op, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failed(op, path); err != nil {
		return err
	}
	if p := filepath.Clean(path); op == OpCreate && c.tracked(p) {
		n := c.live[p]
		if n == nil {
			n = c.newNode(false)
			c.live[p] = n
		}
		n.synced = 0 // tidwall creates with O_TRUNC
	}
	return nil
}

// Synced implements Hook: size bytes of path are durable, unless the power
// is already lost. A report of fewer bytes than an earlier one changes
// nothing: an fsync that started before a later one finished (the journal
// fsyncs the tail while tidwall may fill and fsync it) cannot make bytes
// that one made durable volatile again.
func (c *CrashFS) Synced(path string, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed.Load() {
		return
	}
	if n := c.live[filepath.Clean(path)]; n != nil {
		n.synced = max(n.synced, size)
	}
}

// crashFile is a File of a CrashFS; n is nil for files opened read-only or
// outside the root.
type crashFile struct {
	*os.File
	fs   *CrashFS
	n    *node
	name string
}

func (f *crashFile) Write(b []byte) (int, error) {
	if err := f.fs.failed(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *crashFile) Read(b []byte) (int, error) {
	if err := f.fs.failed(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(b)
}

func (f *crashFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.failed(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *crashFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.failed(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

// Sync fsyncs the file; what it wrote becomes durable at the moment Sync
// records it, unless the power was lost before: then Sync fails.
func (f *crashFile) Sync() error {
	if err := f.fs.failed(OpSync, f.name); err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.n == nil {
		return nil
	}
	info, err := f.File.Stat()
	if err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.failed(OpSync, f.name); err != nil {
		return err
	}
	f.n.synced = info.Size()
	return nil
}

func (f *crashFile) Truncate(size int64) error {
	if err := f.fs.failed(OpTruncate, f.name); err != nil {
		return err
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	if f.n != nil {
		f.fs.mu.Lock()
		f.n.synced = min(f.n.synced, size)
		f.fs.mu.Unlock()
	}
	return nil
}

// Tail says what Apply leaves of the bytes written after a file's last
// fsync.
type Tail uint8

const (
	// TailCut cuts the file at its synced size.
	TailCut Tail = iota
	// TailZeros keeps the file's length, with the unsynced bytes zeroed, as
	// a file whose size reached the disk before its data.
	TailZeros
	// TailGarbage keeps the file's length, with the unsynced bytes
	// replaced by random ones, as torn sectors.
	TailGarbage
	// TailPrefix keeps a random prefix of the unsynced bytes, as a disk
	// that wrote some of them before the power went.
	TailPrefix
)

// Apply rewrites the real folder to the state a power loss at Crash would
// have left (it calls Crash if that was not done). Call it after the engine
// has closed its files. rnd drives TailGarbage and TailPrefix (nil: a fixed
// seed). The CrashFS is spent afterwards.
func (c *CrashFS) Apply(tail Tail, rnd *rand.Rand) error {
	c.Crash()
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	staged := filepath.Join(c.stash, "staged")
	if err := os.MkdirAll(staged, 0o755); err != nil {
		return err
	}
	// 1. Copy out the durable files that are not live where they belong.
	moves := map[string]string{}
	for p, n := range c.durable {
		if n.dir || c.live[p] == n {
			continue
		}
		src := n.stashed
		for q, m := range c.live {
			if m == n {
				src = q
				break
			}
		}
		if src == "" {
			continue // never reached the disk (a failed create)
		}
		dst := filepath.Join(staged, strconv.Itoa(len(moves)))
		if err := copyFile(src, dst, n.synced); err != nil {
			return fmt.Errorf("vfs: crashfs: restore %s: %w", p, err)
		}
		moves[p] = dst
	}
	// 2. Undo the entries that are not durable, deepest first.
	var undo []string
	for p, n := range c.live {
		if c.durable[p] != n {
			undo = append(undo, p)
		}
	}
	sort.Slice(undo, func(i, j int) bool { return len(undo[i]) > len(undo[j]) })
	for _, p := range undo {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("vfs: crashfs: undo %s: %w", p, err)
		}
	}
	// 3. Bring back durable folders and files.
	var paths []string
	for p := range c.durable {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		n := c.durable[p]
		switch {
		case n.dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case moves[p] != "":
			if err := os.Rename(moves[p], p); err != nil {
				return fmt.Errorf("vfs: crashfs: restore %s: %w", p, err)
			}
		case c.live[p] == n:
			if err := tear(p, n.synced, tail, rnd); err != nil {
				return fmt.Errorf("vfs: crashfs: cut %s: %w", p, err)
			}
		}
	}
	return os.RemoveAll(c.stash)
}

// tear leaves of the file p its first synced bytes and, as tail says, what
// follows them.
func tear(p string, synced int64, tail Tail, rnd *rand.Rand) error {
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	size := info.Size()
	if size <= synced {
		return nil // nothing unsynced
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	switch tail {
	case TailZeros, TailGarbage:
		b := make([]byte, size-synced)
		if tail == TailGarbage {
			for i := range b {
				b[i] = byte(rnd.UintN(256))
			}
		}
		_, err = f.WriteAt(b, synced)
	case TailPrefix:
		err = f.Truncate(synced + rnd.Int64N(size-synced+1))
	default:
		err = f.Truncate(synced)
	}
	return err
}

// copyFile copies the first n bytes of src (all if n < 0) to a new file dst.
func copyFile(src, dst string, n int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if n >= 0 {
		r = io.LimitReader(in, n)
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
