package engine

// A full disk at Open: the journal's torn tail is repaired without needing
// room for a copy of the file, a failed attempt leaves nothing behind, the
// database opens and serves reads while writes are refused with
// ErrReadOnly, and nothing acknowledged is lost.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// treeBytes is the size of every file under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tearJournal appends a torn entry to the last journal file: a length
// prefix promising more bytes than follow, then random bytes or zeros.
func tearJournal(t *testing.T, dir string, rnd *rand.Rand) int {
	t.Helper()
	jdir := filepath.Join(dir, dbfile.JournalDir)
	ents, err := os.ReadDir(jdir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("journal folder: %v, %d files", err, len(ents))
	}
	path := filepath.Join(jdir, ents[len(ents)-1].Name())
	n := 1 + rnd.IntN(4<<10)
	tail := binary.AppendUvarint(nil, uint64(n+rnd.IntN(1<<10)+1))
	body := make([]byte, n)
	if rnd.IntN(2) == 0 {
		for i := range body {
			body[i] = byte(rnd.Uint32())
		}
	}
	tail = append(tail, body...)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(tail); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return len(tail)
}

// fillDisk injects what a full disk does: every write fails with ENOSPC
// after writing what fits, and so does every new folder and every new file
// (broken/ and the copy in it, a temp MANIFEST or CLOCK, a segment file).
func fillDisk(fsys *vfs.FaultFS) {
	fsys.Inject(vfs.Rule{Op: vfs.OpWrite, Err: syscall.ENOSPC, Partial: true})
	fsys.Inject(vfs.Rule{Op: vfs.OpMkdir, Path: dbfile.BrokenDir, Err: syscall.ENOSPC})
	for _, p := range []string{dbfile.BrokenDir + "/", ".tmp", dbfile.SegmentDir + "/"} {
		fsys.Inject(vfs.Rule{Op: vfs.OpCreate, Path: p, Err: syscall.ENOSPC})
	}
}

func TestOpenOnFullDisk(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			e := newFtEnv(t, func(o *Options) { o.JournalSegmentSize = 1 << 20 })
			e.load(200+rnd.IntN(200), 300+rnd.IntN(500))
			e.db.Close()
			e.db = nil
			tearJournal(t, e.dir, rnd)

			prev := int64(-1)
			for round := range 3 {
				fillDisk(e.fs)
				e.open()
				// Round 0 finds the torn tail; later rounds find the
				// torn tail of the write refused before, if it tore.
				if r := e.db.jnl.Repair(); (round == 0 && r == nil) || (r != nil && r.Copy != "") {
					t.Fatalf("round %d: repair %+v, want a cut with no copy kept", round, r)
				}
				e.check(true)
				err := e.upsert(fmt.Sprintf("new%d", round), 0, 100)
				if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("round %d: a write on a full disk: %v, want ErrReadOnly wrapping ENOSPC", round, err)
				}
				e.check(true) // reads go on
				e.db.Close()
				e.db = nil
				if ents, err := os.ReadDir(filepath.Join(e.dir, dbfile.BrokenDir)); len(ents) > 0 {
					t.Fatalf("round %d: broken/ holds %d files (%v) on a full disk", round, len(ents), err)
				}
				n := treeBytes(t, e.dir)
				if prev >= 0 && n > prev {
					t.Fatalf("round %d: %d bytes on disk, %d after the previous round: recovery grew the database", round, n, prev)
				}
				prev = n
				e.fs.Clear()
			}
			e.open()
			e.check(false)
			if err := e.upsert("after", 0, 10); err != nil {
				t.Fatalf("a write once the disk has room: %v", err)
			}
			e.check(true)
		})
	}
}

// TestOpenOnFullTmpfs fills a small real file system (a 2 MiB tmpfs, which
// needs the right to mount; skipped otherwise) until a write fails, then
// reopens it full: Open must succeed without using more space, serve every
// acknowledged item, refuse writes with ErrReadOnly, and take writes again
// once a little room is freed.
func TestOpenOnFullTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a file system")
	}
	mnt := mountTmpfs(t, "2m")
	dir := filepath.Join(mnt, "db")
	// Room to give back later: 200 KiB the database cannot use.
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 200<<10), 0o644); err != nil {
		t.Fatal(err)
	}

	e := &ftEnv{t: t, dir: dir, fs: vfs.NewFaultFS(vfs.OS, 1), clk: newFakeClock(t0),
		mod:   func(o *Options) { o.JournalSegmentSize = 4 << 20 },
		acked: map[string]ftVersion{}, maybe: map[string][]int{}}
	t.Cleanup(func() {
		if e.db != nil {
			e.db.Close()
		}
	})
	e.open()
	if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: "c", DefaultTTL: TTL(-1)}); err != nil {
		t.Fatal(err)
	}
	e.c = e.container()
	var err error
	for i := 0; err == nil; i++ {
		if i > 100000 {
			t.Fatal("the 2 MiB file system never filled")
		}
		err = e.upsert(fmt.Sprintf("k%d", i), 0, 2000)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the write that filled the disk: %v, want ENOSPC", err)
	}
	e.db.Close()
	e.db = nil
	t.Logf("%d items acknowledged before the disk filled", len(e.acked))

	free := func() int64 { return freeBytes(t, mnt) }
	before := free()
	for round := range 3 {
		e.open()
		t.Logf("round %d: repair %+v", round, e.db.jnl.Repair())
		e.check(false)
		if err := e.upsert("new", 0, 4000); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("round %d: a write on a full disk: %v, want ErrReadOnly", round, err)
		}
		e.db.Close()
		e.db = nil
		if f := free(); f < before {
			t.Fatalf("round %d: %d bytes free after Open, %d before: recovery used the space", round, f, before)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.check(false)
	if err := e.upsert("after", 0, 100); err != nil {
		t.Fatalf("a write once 200 KiB are free: %v", err)
	}
}

// TestOpenOnFullDiskTornManifest: a MANIFEST whose last edit is torn (a
// crash while a container was created, deleted or changed: the edit cut
// off, damaged or never written past zeros) is repaired on a full disk
// too. Open needs room neither for a copy of the file nor for a rewrite of
// it; it opens with the state the whole edits describe, serves every
// acknowledged item, leaves nothing under broken/ and does not grow the
// directory, however often it is retried; once there is room, writes and
// metadata changes go on.
func TestOpenOnFullDiskTornManifest(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			e := newFtEnv(t, nil)
			e.load(50+rnd.IntN(100), 100+rnd.IntN(300))
			want := []string{"c"}
			for i := range 5 + rnd.IntN(60) {
				id := fmt.Sprintf("x%03d", i)
				if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: id}); err != nil {
					t.Fatal(err)
				}
				want = append(want, id)
			}
			e.db.Close() // the MANIFEST is one snapshot
			e.db = nil
			e.open()
			for _, id := range want[1:][:rnd.IntN(len(want)-1)] { // and a few edits
				c, _ := e.db.Container(id)
				if err := c.SetProperties(t.Context(), ContainerProperties{ID: id, DefaultTTL: TTL(60)}); err != nil {
					t.Fatal(err)
				}
			}
			e.db.Close()
			e.db = nil
			// The torn last edit: a create of "torn", cut short, with a
			// byte flipped, or zeros where it should be.
			frame, err := dbfile.AppendEdit(nil, &dbfile.ManifestEdit{NextFile: 1 << 20, NextContainer: 1 << 20,
				Put: []dbfile.ContainerMeta{{Num: 1<<20 - 1, ID: "torn", History: []dbfile.HistoryEntry{{At: t0}}}}})
			if err != nil {
				t.Fatal(err)
			}
			switch rnd.IntN(3) {
			case 0:
				frame = frame[:1+rnd.IntN(len(frame)-1)]
			case 1:
				frame[rnd.IntN(len(frame))] ^= byte(1 + rnd.IntN(255))
			default:
				clear(frame)
			}
			if seed%2 == 1 { // a folder of copies from an earlier repair: the copy itself fails
				if err := os.MkdirAll(filepath.Join(e.dir, dbfile.BrokenDir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(e.dir, dbfile.ManifestName)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(frame); err != nil {
				t.Fatal(err)
			}
			f.Close()

			prev := treeBytes(t, e.dir)
			for round := range 3 {
				fillDisk(e.fs)
				e.open()
				if got := e.db.Containers(); !slices.Equal(got, want) {
					t.Fatalf("round %d: containers %v, want %v", round, got, want)
				}
				e.check(true)
				if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: "full"}); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("round %d: a create on a full disk: %v, want ENOSPC", round, err)
				}
				e.db.Close()
				e.db = nil
				if ents, err := os.ReadDir(filepath.Join(e.dir, dbfile.BrokenDir)); len(ents) > 0 {
					t.Fatalf("round %d: broken/ holds %d files (%v) on a full disk", round, len(ents), err)
				}
				if n := treeBytes(t, e.dir); n > prev {
					t.Fatalf("round %d: %d bytes on disk, %d before: recovery grew the database", round, n, prev)
				}
				e.fs.Clear()
			}
			e.open()
			if got := e.db.Containers(); !slices.Equal(got, want) {
				t.Fatalf("with room: containers %v, want %v", got, want)
			}
			e.check(false)
			if err := e.upsert("after", 0, 10); err != nil {
				t.Fatalf("a write once the disk has room: %v", err)
			}
			if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: "after"}); err != nil {
				t.Fatalf("a create once the disk has room: %v", err)
			}
			e.check(true)
		})
	}
}

// mountTmpfs mounts a tmpfs of the given size (as mount's size option) on
// a new folder, unmounted at cleanup, and returns the folder. It skips the
// test where mounting is not allowed, and with -short.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts a file system")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// freeBytes is the space left to an unprivileged writer on dir's file
// system.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestOpenOnFullTmpfsTornManifest: on a small real file system (a 1 MiB
// tmpfs; skipped where it cannot be mounted) filled to the last byte while
// the database was closed with a torn last MANIFEST edit, Open cuts the
// edit in place, keeps no copy it could not finish, serves every
// acknowledged item and container without using more space, and takes
// metadata changes again once room is freed.
func TestOpenOnFullTmpfsTornManifest(t *testing.T) {
	mnt := mountTmpfs(t, "1m")
	e := &ftEnv{t: t, dir: filepath.Join(mnt, "db"), fs: vfs.NewFaultFS(vfs.OS, 1), clk: newFakeClock(t0),
		acked: map[string]ftVersion{}, maybe: map[string][]int{}}
	t.Cleanup(func() {
		if e.db != nil {
			e.db.Close()
		}
	})
	e.open()
	if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: "c", DefaultTTL: TTL(-1)}); err != nil {
		t.Fatal(err)
	}
	e.c = e.container()
	e.load(100, 500)
	want := []string{"c"}
	for i := range 30 {
		id := fmt.Sprintf("x%02d", i)
		if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: id}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	e.db.Close()
	e.db = nil
	frame, err := dbfile.AppendEdit(nil, &dbfile.ManifestEdit{NextFile: 1 << 20, NextContainer: 1 << 20,
		Put: []dbfile.ContainerMeta{{Num: 1<<20 - 1, ID: "torn", History: []dbfile.HistoryEntry{{At: t0}}}}})
	if err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(e.dir, dbfile.ManifestName)
	f, err := os.OpenFile(mpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(frame[:len(frame)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	torn, err := os.Stat(mpath)
	if err != nil {
		t.Fatal(err)
	}
	// Fill what is left, to the last byte.
	filler := filepath.Join(mnt, "filler")
	ff, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := 64 << 10; chunk > 0; chunk /= 2 {
		for {
			if _, err := ff.Write(make([]byte, chunk)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	ff.Close()
	before := freeBytes(t, mnt)
	if before != 0 {
		t.Fatalf("%d bytes still free after filling", before)
	}

	e.open()
	if got := e.db.Containers(); !slices.Equal(got, want) {
		t.Fatalf("containers %v, want %v", got, want)
	}
	e.check(true)
	if st, err := os.Stat(mpath); err != nil || st.Size() != torn.Size()-int64(len(frame)/2) {
		t.Fatalf("MANIFEST after Open: %v, %v; want the torn edit cut off (%d bytes)", st, err, torn.Size()-int64(len(frame)/2))
	}
	if err := e.upsert("new", 0, 8000); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a write on the full file system: %v, want ErrReadOnly", err)
	}
	e.check(true) // reads go on
	e.db.Close()
	e.db = nil
	if ents, _ := os.ReadDir(filepath.Join(e.dir, dbfile.BrokenDir)); len(ents) > 0 {
		t.Fatalf("broken/ holds %d files on a full file system", len(ents))
	}
	if f := freeBytes(t, mnt); f < before {
		t.Fatalf("%d bytes free after Open, %d before: the repair used space", f, before)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.check(false)
	if _, err := e.db.CreateContainer(t.Context(), ContainerProperties{ID: "after"}); err != nil {
		t.Fatalf("a create once room is freed: %v", err)
	}
	if err := e.upsert("after", 0, 100); err != nil {
		t.Fatalf("a write once room is freed: %v", err)
	}
}
