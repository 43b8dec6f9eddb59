package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/internal/ttlvectors"
)

func ttl(v int32) *int32 { return &v }

// TestMatrixVectors runs every "matrix" case of the vectors through a
// history with a single creation entry at or before the write.
func TestMatrixVectors(t *testing.T) {
	v := ttlvectors.MustLoad(t)
	for _, c := range v.Matrix {
		t.Run(c.Name, func(t *testing.T) {
			var d *int32
			if c.DefaultTTL != nil {
				if err := ValidateDefaultTTL(*c.DefaultTTL); err != nil {
					t.Fatalf("vector defaultTtl: %v", err)
				}
				d = ttl(int32(*c.DefaultTTL))
			}
			var item int32
			if c.ItemTTLJSON != nil {
				var err error
				if item, err = ParseItemTTL([]byte(*c.ItemTTLJSON)); err != nil {
					t.Fatalf("vector itemTtlJson: %v", err)
				}
			}
			for _, ts := range []int64{0, 1, 1_700_000_000, 1 << 40} {
				for _, age := range []int64{0, 1, 1000, 1_000_000} {
					if age > ts {
						continue
					}
					h := History{{At: ts - age, DefaultTTL: d}}
					exp := h.ExpiresAt(ts, item)
					for _, off := range c.VisibleAt {
						if Expired(exp, ts+off) {
							t.Errorf("ts=%d created=%d: expired at +%d (expiresAt=%d), want visible", ts, ts-age, off, exp)
						}
					}
					for _, off := range c.InvisibleAt {
						if !Expired(exp, ts+off) {
							t.Errorf("ts=%d created=%d: visible at +%d (expiresAt=%d), want expired", ts, ts-age, off, exp)
						}
					}
					// ExpiresAt on a single entry is Effective applied to _ts.
					if eff, finite := Effective(d, item); finite != (exp != Never) || (finite && exp != ts+eff) {
						t.Errorf("ts=%d: ExpiresAt=%d disagrees with Effective=%d,%v", ts, exp, eff, finite)
					}
				}
			}
		})
	}
}

type step struct {
	at int64
	d  *int32
}

func hist(steps ...step) History {
	h := make(History, len(steps))
	for i, s := range steps {
		h[i] = Change{At: s.at, DefaultTTL: s.d}
	}
	return h
}

func TestWith(t *testing.T) {
	var h History
	h = h.With(100, nil)
	if len(h) != 1 || h[0].At != 100 || h.Current() != nil {
		t.Fatalf("first change not recorded: %s", show(h))
	}
	d := int32(50)
	h2 := h.With(200, &d)
	d = 7 // the history keeps its own copy
	if len(h) != 1 || len(h2) != 2 || *h2.Current() != 50 || h2[1].At != 200 {
		t.Fatalf("With(200, 50): h=%s h2=%s", show(h), show(h2))
	}
	// Same DefaultTTL as in force: no new entry.
	if h3 := h2.With(300, ttl(50)); len(h3) != 2 {
		t.Errorf("With of the current value added an entry: %s", show(h3))
	}
	if h3 := h.With(300, nil); len(h3) != 1 {
		t.Errorf("With(nil) on TTL off added an entry: %s", show(h3))
	}
	// A change stamped before the newest entry is clamped to it.
	if h3 := h2.With(150, ttl(-1)); h3[2].At != 200 {
		t.Errorf("With(150) after 200: %s, want clamped to 200", show(h3))
	}

	// Copy-on-write: two successors of a history with spare capacity do not
	// share or overwrite each other's entries, nor the original's.
	base := make(History, 1, 8)
	base[0] = Change{At: 0, DefaultTTL: ttl(10)}
	a := base.With(5, ttl(20))
	b := base.With(6, ttl(30))
	if *a[1].DefaultTTL != 20 || a[1].At != 5 || *b[1].DefaultTTL != 30 || len(base) != 1 || base[:2][1] != (Change{}) {
		t.Errorf("successors interfere: base=%s a=%s b=%s", show(base), show(a), show(b))
	}
}

func TestCurrentAndDefaultTTLAt(t *testing.T) {
	var empty History
	if empty.Current() != nil || empty.DefaultTTLAt(5) != nil {
		t.Fatal("empty history must read as TTL off")
	}
	h := hist(step{10, ttl(5)}, step{20, nil}, step{20, ttl(-1)}, step{30, ttl(7)})
	for _, c := range []struct {
		t    int64
		want string
	}{{9, "off"}, {10, "5"}, {19, "5"}, {20, "-1"}, {29, "-1"}, {30, "7"}, {1 << 50, "7"}} {
		if got := show(h.DefaultTTLAt(c.t)); got != c.want {
			t.Errorf("DefaultTTLAt(%d) = %s, want %s", c.t, got, c.want)
		}
	}
	if *h.Current() != 7 {
		t.Errorf("Current = %s", show(h.Current()))
	}
}

func TestValidate(t *testing.T) {
	if err := hist(step{10, nil}, step{10, ttl(-1)}, step{11, ttl(MaxTTL)}).Validate(); err != nil {
		t.Errorf("valid history: %v", err)
	}
	if err := hist(step{10, nil}, step{9, ttl(1)}).Validate(); err == nil {
		t.Error("decreasing At accepted")
	}
	for _, bad := range []int32{0, -2, math.MinInt32} {
		err := hist(step{10, ttl(bad)}).Validate()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("defaultTtl %d is invalid", bad)) {
			t.Errorf("DefaultTTL %d: %v", bad, err)
		}
	}
}

func TestCompact(t *testing.T) {
	h := hist(step{0, ttl(5)}, step{10, nil}, step{20, ttl(100)}, step{30, ttl(100)}, step{40, nil})
	c := h.Compact(25)
	if want := "[20:100 40:off]"; show(c) != want {
		t.Errorf("Compact(25) = %s, want %s", show(c), want)
	}
	if len(h) != 5 || h[3].At != 30 {
		t.Errorf("Compact modified its receiver: %s", show(h))
	}
	// An entry whose interval ends exactly at minTS is kept: it is in force at
	// minTS.
	if got := hist(step{0, ttl(5)}, step{10, nil}).Compact(10); len(got) != 2 {
		t.Errorf("Compact(10) dropped the entry in force at 10: %s", show(got))
	}
	if got := hist(step{0, ttl(5)}, step{10, nil}).Compact(11); show(got) != "[10:off]" {
		t.Errorf("Compact(11) = %s", show(got))
	}
	if got := History(nil).Compact(100); got != nil {
		t.Errorf("Compact of nil = %s", show(got))
	}
}

// TestExpiresAtBruteForce compares ExpiresAt with a second-by-second
// simulation of the rule on small random histories.
func TestExpiresAtBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	for range n {
		h := randomHistory(rng)
		ts := rng.Int64N(50)
		item := randomItemTTL(rng)
		got := h.ExpiresAt(ts, item)
		want := simulate(h, ts, item)
		if got != want {
			t.Fatalf("%s.ExpiresAt(ts=%d, ttl=%d) = %d, simulation says %d", show(h), ts, item, got, want)
		}

		// Translation invariance, far from zero.
		const k = 1 << 45
		sh := make(History, len(h))
		for i, c := range h {
			sh[i] = Change{At: c.At + k, DefaultTTL: c.DefaultTTL}
		}
		if g := sh.ExpiresAt(ts+k, item); (got == Never) != (g == Never) || (got != Never && g != got+k) {
			t.Fatalf("shifted by 2^45: %d vs %d", g, got)
		}

		// Compact changes no answer for items written at or after minTS.
		minTS := rng.Int64N(60)
		if ts >= minTS {
			if g := h.Compact(minTS).ExpiresAt(ts, item); g != got {
				t.Fatalf("%s.Compact(%d) = %s: ExpiresAt(%d, %d) %d, want %d",
					show(h), minTS, show(h.Compact(minTS)), ts, item, g, got)
			}
		}

		// Appending a change at T never rewrites the past: before T nothing
		// changes, an item already expired by T keeps its instant, and the
		// change can expire others at T at the earliest.
		at := rng.Int64N(80)
		if len(h) > 0 {
			at = max(at, h[len(h)-1].At)
		}
		h2 := h.With(at, randomDefault(rng))
		got2 := h2.ExpiresAt(ts, item)
		if got <= at && got2 != got || got > at && got2 < at {
			t.Fatalf("%s then change at %d -> %s: ExpiresAt %d became %d", show(h), at, show(h2), got, got2)
		}
		if want2 := simulate(h2, ts, item); got2 != want2 {
			t.Fatalf("%s.ExpiresAt(%d, %d) = %d, simulation says %d", show(h2), ts, item, got2, want2)
		}
	}
}

// simulate walks time second by second. At instant t every entry whose
// closed interval [At_i, At_i+1] contains t is in force; the item is expired
// at t if one of them has a finite effective ttl with ts+eff <= t. The
// first such t is the expiry instant (expiry is final).
func simulate(h History, ts int64, item int32) int64 {
	// Effective ttls are at least 1, so nothing expires before ts+1; and
	// after the last change plus the longest ttl (25) nothing new happens.
	end := ts + 26
	if len(h) > 0 {
		end = max(end, h[len(h)-1].At+ts+26)
	}
	for t := ts + 1; t <= end; t++ {
		for i, c := range h {
			if t < c.At || (i+1 < len(h) && t > h[i+1].At) {
				continue
			}
			if eff, finite := Effective(c.DefaultTTL, item); finite && ts+eff <= t {
				return t
			}
		}
	}
	return Never
}

func randomDefault(rng *rand.Rand) *int32 {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return ttl(-1)
	}
	return ttl(1 + rng.Int32N(25))
}

func randomItemTTL(rng *rand.Rand) int32 {
	switch rng.IntN(3) {
	case 0:
		return 0
	case 1:
		return -1
	}
	return 1 + rng.Int32N(25)
}

func randomHistory(rng *rand.Rand) History {
	n := rng.IntN(6) // 0..5 entries; 0 is "no history": TTL off
	h := make(History, n)
	at := rng.Int64N(20)
	for i := range h {
		h[i] = Change{At: at, DefaultTTL: randomDefault(rng)}
		if rng.IntN(3) > 0 { // leave some changes in the same second
			at += rng.Int64N(15)
		}
	}
	return h
}

func show(v any) string {
	switch v := v.(type) {
	case *int32:
		if v == nil {
			return "off"
		}
		return fmt.Sprint(*v)
	case History:
		parts := make([]string, len(v))
		for i, c := range v {
			parts[i] = fmt.Sprintf("%d:%s", c.At, show(c.DefaultTTL))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(v)
}

func BenchmarkExpiresAt(b *testing.B) {
	h := hist(step{0, nil}, step{1000, ttl(3600)}, step{5000, ttl(-1)}, step{9000, ttl(60)})
	for b.Loop() {
		_ = h.ExpiresAt(9500, 0)
	}
}

func BenchmarkParseItemTTL(b *testing.B) {
	for _, raw := range []string{"3600", "-1", "3.6e3"} {
		b.Run(raw, func(b *testing.B) {
			r := []byte(raw)
			for b.Loop() {
				_, _ = ParseItemTTL(r)
			}
		})
	}
}
