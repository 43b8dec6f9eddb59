package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMain lets the test binary stand in for the ebb binary: run with
// EBB_TEST_MAIN=1 it is ebb, so tests can check real exit codes without
// building anything; with EBB_TEST_WRITER=DIR it is busyWriter, another
// process that holds a database open and keeps changing it.
func TestMain(m *testing.M) {
	if os.Getenv("EBB_TEST_MAIN") == "1" {
		main()
		return
	}
	if dir := os.Getenv("EBB_TEST_WRITER"); dir != "" {
		busyWriter(dir)
		return
	}
	os.Exit(m.Run())
}

// ebb runs the command line in-process and returns its output and exit code.
func ebb(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// ebbProcess runs the command line as a process (the test binary as ebb).
func ebbProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "EBB_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func wantCode(t *testing.T, code, want int, stdout, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// t0 is the fake time the test databases are written at.
const t0 = 1_700_000_000

// buildDB makes a database in a new directory, always the same, written at
// t0: container "sessions" (DefaultTTL 10) with 30 items inheriting the
// default in seg/00000001.seg, 20 with ttl 5 in seg/00000002.seg, and in
// the journal 10 that never expire, two deletes and three rewrites;
// container "plain" (TTL off, lazy indexing) with one item in
// seg/00000003.seg. With open
// set, the database is left open (its lock held) until the test ends, and
// writes with fsync on: with NoSync the journal queue may not yet have
// written the last writes when the test reads the files.
func buildDB(t *testing.T, open bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	clock := func() time.Time { return time.Unix(t0, 0) }
	db, err := engine.Open(dir, &engine.Options{Clock: clock, SealThreshold: 1 << 30, BlockSize: 512, NoSync: !open})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions", DefaultTTL: engine.TTL(10)})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "plain", Indexing: engine.IndexingLazy})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	put := func(doc string) {
		t.Helper()
		_, err := c.Upsert(ctx, []byte(doc))
		must(err)
	}
	// Only one container has records at each seal, so file numbers are
	// always the same.
	for i := range 30 {
		put(fmt.Sprintf(`{"id":"d%02d","pad":"%040d"}`, i, i))
	}
	must(plain.Compact(ctx)) // seals "sessions" into file 1
	for i := range 20 {
		put(fmt.Sprintf(`{"id":"t%02d","ttl":5,"pad":"%040d"}`, i, i))
	}
	must(plain.Compact(ctx)) // file 2
	_, err = plain.Upsert(ctx, []byte(`{"id":"p","ttl":3}`))
	must(err)
	must(plain.Compact(ctx)) // file 3, which Compact leaves as it is: every record in it is live
	for i := range 10 {
		put(fmt.Sprintf(`{"id":"n%02d","ttl":-1,"pad":"%040d"}`, i, i))
	}
	must(c.Delete(ctx, "d00"))
	must(c.Delete(ctx, "n00"))
	for _, id := range []string{"d01", "t01", "n01"} {
		put(fmt.Sprintf(`{"id":%q,"v":2}`, id))
	}
	if open {
		t.Cleanup(func() { db.Close() })
	} else {
		must(db.Close())
	}
	return dir
}

// Values that vary with the build (compressed sizes) are replaced before
// output is compared with a golden file, and so is the test's directory.
var volatileJSON = regexp.MustCompile(`"(bytes|disk_bytes|compression_ratio)": [0-9.e+-]+`)

func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "<dir>")
	return volatileJSON.ReplaceAllString(s, `"$1": "<n>"`)
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestUsage(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string // a part of it
	}{
		{nil, exitUsage, "Usage:"},
		{[]string{"--help"}, exitOK, ""},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"bench", "fill", "--dir"}, exitUsage, "flag needs an argument: --dir"},
		{[]string{"inspect"}, exitUsage, "inspect: accepts 1 arg(s), received 0"},
		{[]string{"inspect", "a", "b"}, exitUsage, "accepts 1 arg(s), received 2"},
		{[]string{"inspect", "--bogus", "x"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"dump"}, exitUsage, "accepts 1 arg(s)"},
		{[]string{"dump", "--limit", "x", "f"}, exitUsage, "invalid argument"},
		{[]string{"verify"}, exitUsage, "accepts 1 arg(s)"},
		{[]string{"demo", "somewhere"}, exitUsage, "demo takes no arguments"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := ebb(t, tc.args...)
			wantCode(t, code, tc.code, stdout, stderr)
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
		})
	}
}

// TestExitCodesAsProcess checks the codes a shell sees.
func TestExitCodesAsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	dir := buildDB(t, false)
	missing := filepath.Join(t.TempDir(), "missing")

	stdout, stderr, code := ebbProcess(t, "verify", dir)
	wantCode(t, code, exitOK, stdout, stderr)

	stdout, stderr, code = ebbProcess(t, "inspect", missing)
	wantCode(t, code, exitUsage, stdout, stderr)
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 {
		t.Errorf("want a one-line error, got %q", stderr)
	}

	flip(t, filepath.Join(dir, "seg", "00000001.seg"), 40)
	stdout, stderr, code = ebbProcess(t, "verify", dir)
	wantCode(t, code, exitFailed, stdout, stderr)

	stdout, stderr, code = ebbProcess(t, "verify")
	wantCode(t, code, exitUsage, stdout, stderr)
}

// flip flips one bit of the byte at off (from the end when negative).
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0x04
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
