// Package vfs is the file layer under ebb's live engine: every file
// operation the engine does on its own files (the MANIFEST, the CLOCK, the
// LOCK, segment files, the journal's folder and the descriptor it fsyncs
// the tail with, the listings behind the disk figures) goes through an FS,
// so that tests can inject faults and simulate power loss. Production code
// uses OS, which calls package os and adds nothing. The offline tools
// (package engine/tool), and the path-taking conveniences segment.Open,
// segment.Create, journal.ReadFile and journal.StartsWithEntry, read
// through OS.
//
// Besides the FS, the package holds the few file recipes the engine
// repeats: SyncDir (a folder fsync whose error names the folder),
// WriteFileAtomic (replace a small file through a temporary file, fsync,
// rename and folder fsync), WalkDir (filepath.WalkDir through an FS) and
// KeepCopy (a durable copy of bytes a repair cuts). TestImportRules in
// package engine checks that no other package of the module calls package
// os for a file operation (apart from the command line, the crash-loop
// harness and test support), and that vfs imports nothing of the module,
// so every package may import it.
//
// # What an FS covers
//
//   - Create, open for writing or reading, write, positioned read, fsync,
//     truncate and close of a file; rename, remove, mkdir, readdir and stat
//     of a path; reading a whole file; fsync of a folder; the open of the
//     LOCK file (the flock itself is a system call on the file's descriptor).
//
// # The journal and tidwall/wal
//
// The journal stores its entries with github.com/tidwall/wal, which writes,
// fsyncs and creates its segment files with package os itself, so an FS
// cannot wrap those calls. Instead an FS that also implements Hook is told
// about them at the journal's boundary:
//
//   - Before(OpCreate, path) before an append that makes tidwall start a new
//     segment file (one call per file it will create); Before(OpWrite, tail)
//     before every batch is handed to tidwall; Before(OpSync, tail) before
//     each fsync of the tail that the journal has tidwall make (in Cycle and
//     in Close).
//     An error from Before fails the operation before tidwall is called,
//     exactly as if the call had failed: the journal is failed and the
//     caller gets the error.
//   - The journal's own fsyncs of the tail (SyncTo: after each append,
//     unless NoSync, and in Sync) go through a descriptor of the tail
//     opened with the FS, so the FS sees that open and each fsync as
//     operations on a File of its own and fails them as such; Before is
//     not asked about them.
//   - Synced(path, size) after each fsync of the tail that succeeded, with
//     the size the file had then. tidwall also fsyncs each file it fills
//     before it creates the next; that file's final size is reported with
//     the creation, just before the append is handed to tidwall, since a
//     concurrent folder fsync may make the new file durable at once. (A
//     power loss in between then keeps the filled file whole: bytes of an
//     unacknowledged append, never a loss of acknowledged ones.) The
//     journal's own folder fsyncs, removals (TruncateFront), repairs and
//     listings go through the FS.
//
// What the hook does not cover: a failure inside tidwall's own write after
// part of the bytes reached the file (simulated by failing before the call,
// and, for what reaches the disk, by the power-loss truncation of CrashFS,
// which may cut the tail anywhere after the last synced size); tidwall's
// reads of its segment files (only at Open's replay), which cannot be failed;
// and tidwall's settling of its own truncation files at open, which ebb never
// creates. With OS the hook is nil and the journal skips it: one nil check
// per call.
//
// # Test file systems
//
// FaultFS fails chosen operations on chosen paths with a chosen error
// (ENOSPC, EIO, ...), for the next N calls or with a probability, switchable
// while the engine runs, and counts what it injected. CrashFS records what
// is durable (the size of each file at its last fsync, and which folder
// entries were fsynced) and, after Crash, rewrites the real folder to that
// state, as a power loss would leave it.
package vfs

import (
	"io"
	"io/fs"
	"os"
)

// Op is a kind of file operation, as FaultFS matches and counts them and as
// Hook.Before names them.
type Op uint8

// The operations an FS performs.
const (
	OpCreate   Op = iota + 1 // create a file, or open one for writing
	OpOpen                   // open a file for reading
	OpWrite                  // write to a file
	OpSync                   // fsync a file
	OpRead                   // read a file (ReadAt, Read, ReadFile)
	OpRename                 // rename a file
	OpRemove                 // remove a file
	OpSyncDir                // fsync a folder
	OpMkdir                  // create folders
	OpReadDir                // list a folder
	OpStat                   // stat a path or an open file
	OpTruncate               // change a file's size
	numOps
)

var opNames = [...]string{"", "create", "open", "write", "sync", "read", "rename", "remove",
	"syncdir", "mkdir", "readdir", "stat", "truncate"}

// String returns the operation's name ("write", "syncdir", ...).
func (op Op) String() string {
	if op < numOps {
		return opNames[op]
	}
	return "op?"
}

// Ops lists every operation kind, in order.
func Ops() []Op {
	out := make([]Op, 0, numOps-1)
	for op := OpCreate; op < numOps; op++ {
		out = append(out, op)
	}
	return out
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync commits the file's contents to stable storage (fsync).
	Sync() error
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Fd is the file's descriptor, for flock.
	Fd() uintptr
}

// FS is a file system: what the engine needs of one. Paths are OS paths.
// Errors are those of package os (an *fs.PathError around the cause), so
// errors.Is(err, syscall.ENOSPC) and errors.Is(err, fs.ErrNotExist) work.
type FS interface {
	// OpenFile opens name with the flags and mode of os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	// ReadFile returns the whole content of name.
	ReadFile(name string) ([]byte, error)
	// Rename renames oldname to newname, replacing it if it exists.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty folder.
	Remove(name string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm fs.FileMode) error
	// ReadDir lists dir, sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat describes name.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir fsyncs the folder dir, making the creation, renaming and
	// removal of its entries durable.
	SyncDir(dir string) error
}

// Hook is implemented by an FS that wants to see, and fail, the file
// operations that code outside its reach does with package os: tidwall/wal's
// writes under the journal (see the package comment).
type Hook interface {
	// Before is called before op on path; an error fails op, which is then
	// not attempted.
	Before(op Op, path string) error
	// Synced reports that path was fsynced while it was size bytes long.
	Synced(path string, size int64)
}

// HookOf returns fsys's Hook, or nil when it has none (OS).
func HookOf(fsys FS) Hook {
	h, _ := fsys.(Hook)
	return h
}

// ReadAtCloser is an open file as a segment reader takes it.
type ReadAtCloser interface {
	io.ReaderAt
	io.Closer
}

// Default returns fsys, or OS when fsys is nil.
func Default(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

// CreateExcl creates name for writing, failing if it exists.
func CreateExcl(fsys FS, name string) (File, error) {
	return fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}
