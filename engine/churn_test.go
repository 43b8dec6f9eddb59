package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestChurnReclaimsSpace writes never-repeating keys with a 10 s TTL while
// a fake clock runs, with the background compactor on, and checks that disk
// space tracks live data and comes back once everything has expired. The
// bounds are generous: this is a correctness check, not a benchmark
// (BenchmarkChurn measures).
func TestChurnReclaimsSpace(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *engine.Options) {
		o.NoSync = true
		o.SealThreshold = 512 << 10
		o.CompactionInterval = 5 * time.Millisecond
	})
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "churn", DefaultTTL: engine.TTL(10)})
	pad := strings.Repeat("x", 900)
	n := 0
	for sec := range 40 {
		var b engine.Batch
		for range 100 {
			b.Upsert([]byte(fmt.Sprintf(`{"id":"k%06d","sec":%d,"pad":"%s"}`, n, sec, pad)))
			n++
		}
		if _, err := c.ExecuteBatch(ctx, &b); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1)
		if sec >= 20 {
			if st := c.Stats(); st.Items != 900 {
				t.Fatalf("second %d: %d live items, want 900 (the last 9 s of 100/s)", sec, st.Items)
			}
		}
	}
	eventually(t, 20*time.Second, "space amplification under 3 at steady state", func() (bool, string) {
		m := c.Metrics()
		return m.SpaceAmplification > 0 && m.SpaceAmplification < 3, fmt.Sprintf("%+v", m)
	})
	clk.Advance(11) // everything has expired
	if st := c.Stats(); st.Items != 0 || st.LiveBytes != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
	eventually(t, 20*time.Second, "disk space back", func() (bool, string) {
		m := c.Metrics()
		return m.DiskBytes < 64<<10 && m.Segments == 0 && m.ExpiredPending == 0, fmt.Sprintf("%+v", m)
	})
	m := c.Metrics()
	if m.FilesDropped == 0 {
		t.Errorf("no file was dropped whole: %+v", m)
	}
	t.Logf("final metrics: %+v", m)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s: %s", within, what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
