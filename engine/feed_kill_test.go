package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestFeedExactlyOnceAcrossKills is TestFeedExactlyOnceAcrossCrashes with
// SIGKILL: a child process (TestCrashChild in mode "feed") writes with the
// real clock and fsync, and follows its own feed, printing each change
// once handled; the parent kills it at a random moment, keeps the last
// continuation it printed and starts the next child from it. At the end
// the changes printed, round after round, must be the feed read in one go.
func TestFeedExactlyOnceAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes for a few seconds")
	}
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(rand.Uint64(), 3))
	var seen []string
	token := "-"
	for r := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), envChildMode+"=feed", envChildDir+"="+dir)
		cmd.Stdin = strings.NewReader(token + "\n")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var lines []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 64<<10)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
		}()
		time.Sleep(time.Duration(150+rnd.IntN(500)) * time.Millisecond)
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		changes := 0
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "change "):
				f := strings.Fields(l)
				seen = append(seen, strings.Join(f[1:len(f)-1], " "))
				token = f[len(f)-1]
				changes++
			case strings.HasPrefix(l, "error "):
				t.Fatalf("round %d: child: %s\n%s", r, l, stderr.String())
			}
		}
		t.Logf("round %d: %d changes", r, changes)
	}
	db, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for ch, err := range c.ChangeFeed(context.Background(), engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, killLine(ch))
	}
	if len(seen) > len(all) {
		t.Fatalf("the children printed %d changes, the feed holds %d", len(seen), len(all))
	}
	for i := range seen {
		if seen[i] != all[i] {
			t.Fatalf("change %d: printed %q, the feed holds %q", i, seen[i], all[i])
		}
	}
	expired := 0
	for _, l := range all {
		if strings.Contains(l, " expired ") {
			expired++
		}
	}
	t.Logf("the children printed %d changes of %d (%d expiries in all)", len(seen), len(all), expired)
	if len(seen) == 0 || expired == 0 {
		t.Fatalf("nothing to check: %d printed, %d expiries", len(seen), expired)
	}
}

// killLine is a change as the feed child prints it, without the token.
func killLine(ch engine.Change) string {
	exp := "live"
	if ch.TTLExpired {
		exp = "expired"
	}
	return fmt.Sprintf("%d %s %s %d %s %d %d/%08x", ch.LSN, ch.Op, ch.ID, ch.TS, exp, ch.PreviousLSN, len(ch.Body), crc32.ChecksumIEEE(ch.Body))
}

// feedChild is the child of TestFeedExactlyOnceAcrossKills: it reads the
// continuation to resume from on stdin ("-": from the start), then follows
// the feed of container "c", printing each change, while writers upsert,
// delete and batch items that expire in 1 or 2 seconds, until killed.
func feedChild(dir string) int {
	ctx := context.Background()
	var token string
	fmt.Fscanln(os.Stdin, &token)
	if token == "-" {
		token = ""
	}
	db, err := engine.Open(dir, &engine.Options{SealThreshold: 32 << 10, JournalSegmentSize: 16 << 10, CompactionInterval: 20 * time.Millisecond})
	if err != nil {
		emit("error open: %v", err)
		return 0
	}
	c, err := db.Container("c")
	if errors.Is(err, engine.ErrNotFound) {
		c, err = db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(2), ChangeFeedRetention: time.Hour})
	}
	if err != nil {
		emit("error container: %v", err)
		return 0
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for {
				id := fmt.Sprintf("k%d", rnd.IntN(40))
				doc := fmt.Appendf(nil, `{"id":%q,"n":%d,"ttl":%d}`, id, rnd.IntN(1000), 1+rnd.IntN(2))
				switch rnd.IntN(6) {
				case 0:
					c.Delete(ctx, id)
				case 1:
					b := c.NewBatch()
					b.Upsert(doc).Upsert(fmt.Appendf(nil, `{"id":"b%d"}`, rnd.IntN(3)))
					c.ExecuteBatch(ctx, b)
				case 2:
					c.Compact(ctx)
				default:
					c.Upsert(ctx, doc)
				}
				time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
			}
		}()
	}
	for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes, Continuation: token, Follow: true}) {
		if err != nil {
			emit("error feed: %v", err)
			return 0
		}
		emit("change %s %s", killLine(ch), ch.Continuation)
	}
	return 0
}
