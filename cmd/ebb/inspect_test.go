package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

func TestInspectJSON(t *testing.T) {
	dir := buildDB(t, false)
	// At t0+6 the items with ttl 5 have expired; the rest have not.
	stdout, stderr, code := ebb(t, "inspect", "--json", "--at", "1700000006", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	golden(t, "inspect", normalize(stdout, dir))

	var rep tool.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	it := rep.Containers[0].Items
	if it.Live != 39 || it.Expired != 19 || it.NeverExpire != 8 || it.Tombstones != 2 {
		t.Errorf("items %+v", it)
	}
}

func TestInspectHuman(t *testing.T) {
	dir := buildDB(t, true) // open: inspect must not need the lock
	stdout, stderr, code := ebb(t, "inspect", "--at", "2023-11-14T22:13:26Z", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	for _, want := range []string{
		"database " + dir,
		"now 2023-11-14 22:13:26Z",
		"CONTAINER  DEFAULT TTL  INDEXING",
		"sessions   10s          consistent  39    19       8 ",
		"plain      off          lazy        1     0        1 ",
		"2023-11-14 22:13:25Z..22:13:30Z (1s ago..in 4s)",
		"seg/00000001.seg  sessions",
		"seg/00000002.seg  sessions",
		"seg/00000003.seg  plain",
		"DEAD  HIDES",
		"journal/00000000000000000052",
		"journal: 15 record(s) not yet sealed",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestInspectNotADatabase(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	other := filepath.Join(root, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "README"), []byte("hi"), 0o644)
	file := filepath.Join(other, "README")
	for name, dir := range map[string]string{
		"does not exist":   filepath.Join(root, "absent"),
		"is empty":         empty,
		"holds no":         other,
		"is not a directo": file,
	} {
		stdout, stderr, code := ebb(t, "inspect", dir)
		wantCode(t, code, exitUsage, stdout, stderr)
		if !strings.HasPrefix(stderr, "ebb: not an ebb database: ") || !strings.Contains(stderr, name) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("inspect %s: want one line saying it %s, got %q", dir, name, stderr)
		}
	}
}

func TestInspectBadAt(t *testing.T) {
	dir := buildDB(t, false)
	stdout, stderr, code := ebb(t, "inspect", "--at", "yesterday", dir)
	wantCode(t, code, exitUsage, stdout, stderr)
}

func TestInspectMissingSegment(t *testing.T) {
	dir := buildDB(t, false)
	os.Remove(filepath.Join(dir, "seg", "00000002.seg"))
	stdout, stderr, code := ebb(t, "inspect", dir)
	wantCode(t, code, exitFailed, stdout, stderr)
	if !strings.Contains(stdout, "error: seg/00000002.seg: container \"sessions\" names it, but it is missing") {
		t.Errorf("output:\n%s", stdout)
	}
}

// busyWriter opens the database in dir and, until it is killed or 30
// seconds pass, writes items that expire after a second, so that seals,
// journal truncations and compactions add and remove files all the time.
func busyWriter(dir string) {
	db, err := engine.Open(dir, &engine.Options{SealThreshold: 8 << 10, BlockSize: 1 << 10, JournalSegmentSize: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "busy", DefaultTTL: engine.TTL(1)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	for i, end := 0, time.Now().Add(30*time.Second); time.Now().Before(end); i++ {
		if _, err := c.Upsert(ctx, []byte(fmt.Sprintf(`{"id":"k%d","pad":"%0100d"}`, i%500, i))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if i%400 == 399 {
			if err := c.Compact(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	db.Close()
}

// TestInspectWhileAnotherProcessWrites runs inspect and verify on a
// database that another process has open and keeps changing, then once
// more after that process is killed.
func TestInspectWhileAnotherProcessWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a writer process for a few seconds")
	}
	dir := filepath.Join(t.TempDir(), "db")
	writer := exec.Command(os.Args[0], "-test.run=^$")
	writer.Env = append(os.Environ(), "EBB_TEST_WRITER="+dir)
	writer.Stderr = os.Stderr
	out, err := writer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		writer.Process.Kill()
		writer.Wait()
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("writer: %q %v", line, err)
	}
	runs := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); runs++ {
		stdout, stderr, code := ebb(t, "inspect", "--json", dir)
		wantCode(t, code, exitOK, stdout, stderr)
		stdout, stderr, code = ebb(t, "verify", dir)
		wantCode(t, code, exitOK, stdout, stderr)
	}
	t.Logf("%d inspect and verify runs while the writer ran", runs)

	writer.Process.Kill()
	writer.Wait()
	stdout, stderr, code := ebb(t, "verify", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	stdout, stderr, code = ebb(t, "inspect", dir)
	wantCode(t, code, exitOK, stdout, stderr)
}
