package crashloop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// The checker must be able to fail: these tests play the child in-process,
// writing its log lines around real writes, then make the log and the
// database disagree the way a broken engine would, and expect the checker
// to say so. Each scenario also runs untampered, which must pass.

// fakeChild plays the child's part in-process.
type fakeChild struct {
	t     *testing.T
	dbDir string
	wall  atomic.Int64
	db    *engine.DB
	cs    map[string]*engine.Container
	lines []string
	step  int
	n     int
}

const fakeT0 = 1_800_000_000

func newFakeChild(t *testing.T) *fakeChild {
	t.Helper()
	f := &fakeChild{t: t, dbDir: filepath.Join(t.TempDir(), "db"), cs: map[string]*engine.Container{}}
	f.wall.Store(fakeT0)
	db, err := engine.Open(f.dbDir, engineOptions(func() time.Time { return time.Unix(f.wall.Load(), 0) }))
	if err != nil {
		t.Fatal(err)
	}
	f.db = db
	for _, name := range allContainers {
		c, err := db.CreateContainer(context.Background(), engine.ContainerProperties{ID: name, DefaultTTL: defaultTTLOf(name)})
		if err != nil {
			t.Fatal(err)
		}
		f.cs[name] = c
		f.emit("created %s", name)
	}
	f.emit("clock 0 %d %d", fakeT0, fakeT0)
	f.write("r0.k0", contClock, "upsert", probeID, "r0.k0")
	f.emit("clocked 0")
	f.emit("ready")
	return f
}

func (f *fakeChild) emit(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

// write performs a write and logs it as acknowledged; it returns the item.
func (f *fakeChild) write(tag, cont, kind, id, w string) engine.Item {
	f.t.Helper()
	f.emit("start %s %s %s %s %s", tag, cont, kind, id, w)
	ctx := context.Background()
	c := f.cs[cont]
	var it engine.Item
	var err error
	switch kind {
	case "create":
		it, err = c.Create(ctx, docFor(id, w))
	case "upsert":
		it, err = c.Upsert(ctx, docFor(id, w))
	case "delete":
		err = c.Delete(ctx, id)
	}
	if err != nil {
		f.t.Fatalf("%s: %v", tag, err)
	}
	if kind == "delete" {
		f.emit("ack %s - 0", tag)
	} else {
		f.emit("ack %s %s %d", tag, it.ETag, it.TS)
	}
	return it
}

// clock runs a clock step to wall, observed by a read.
func (f *fakeChild) clock(wall int64) {
	f.step++
	f.emit("clock %d %d %d", f.step, wall, wall)
	f.wall.Store(wall)
	if _, err := f.cs[contClock].Read(context.Background(), probeID); err != nil {
		f.t.Fatal(err)
	}
	f.emit("clocked %d", f.step)
}

// check closes the fake child's database and runs the checker on its log,
// reopening at wall; it returns the violation, or "".
func (f *fakeChild) check(wall int64) string {
	f.t.Helper()
	if err := f.db.Close(); err != nil {
		f.t.Fatal(err)
	}
	rep := &Report{}
	m := newModel()
	ck := &checker{dbDir: f.dbDir, m: m, rep: rep}
	r := newRoundLog(0, m, fakeT0)
	for _, l := range f.lines {
		r.add(l)
	}
	ck.afterRound(context.Background(), r, wall, true)
	if r.violation == nil {
		if rep.ItemsChecked == 0 {
			f.t.Error("the checker checked no item")
		}
		return ""
	}
	return r.violation.What + "\n" + strings.Join(r.linesAbout(r.violationLinesFor, 20), "\n")
}

// tagWithTTL returns a write tag with prefix whose document's ttl is ttl.
func tagWithTTL(t *testing.T, prefix string, ttl int32) string {
	for i := range 10000 {
		w := fmt.Sprintf("%s.%d", prefix, i)
		if ttlOf(w) == ttl {
			return w
		}
	}
	t.Fatalf("no tag with ttl %d", ttl)
	return ""
}

func TestCheckerCatches(t *testing.T) {
	never := func(p string) string { return tagWithTTL(t, p, -1) }
	cases := []struct {
		name   string
		run    func(t *testing.T, f *fakeChild, tamper bool) int64 // returns the checker's wall clock
		expect string
	}{
		{
			name: "acknowledged write lost",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				f.write("r0.w0.0", "c", "create", "w0-000", never("a"))
				w := never("b")
				if tamper { // acknowledged, never written
					f.emit("start r0.w0.1 c upsert w0-000 %s", w)
					f.emit(`ack r0.w0.1 "ffff" %d`, fakeT0)
				} else {
					f.write("r0.w0.1", "c", "upsert", "w0-000", w)
				}
				return fakeT0 + 5
			},
			expect: "an acknowledged write was lost",
		},
		{
			name: "deleted item back",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				f.write("r0.w0.0", "c", "create", "w0-001", never("a"))
				if tamper {
					f.emit("start r0.w0.1 c delete w0-001 -")
					f.emit("ack r0.w0.1 - 0")
				} else {
					f.write("r0.w0.1", "c", "delete", "w0-001", "-")
				}
				return fakeT0 + 5
			},
			expect: "a deleted or expired version came back",
		},
		{
			// The log says the DefaultTTL was 30 for a second, 40 s after
			// the write: the item expired then, for good, whatever came
			// after. The database never saw that episode.
			name: "expired item back",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				f.write("r0.w0.0", "c", "create", "w0-002", tagWithTTL(t, "a", 0))
				f.clock(fakeT0 + 40)
				f.emit("policy 1 c 30")
				if !tamper {
					props := f.cs["c"].Properties()
					props.DefaultTTL = engine.TTL(30)
					if err := f.cs["c"].SetProperties(context.Background(), props); err != nil {
						t.Fatal(err)
					}
				}
				f.emit("policied 1 c")
				f.clock(fakeT0 + 41)
				f.emit("policy 2 c 3600")
				if !tamper {
					props := f.cs["c"].Properties()
					props.DefaultTTL = engine.TTL(3600)
					if err := f.cs["c"].SetProperties(context.Background(), props); err != nil {
						t.Fatal(err)
					}
				}
				f.emit("policied 2 c")
				return fakeT0 + 50
			},
			expect: "an expired item came back",
		},
		{
			// A batch in flight at the kill: the database holds one of
			// its writes and not the other.
			name: "half-visible batch",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				a, b := never("a"), never("b")
				f.emit("start r0.w0.0 c upsert w0-003 %s upsert w0-004 %s", a, b)
				var batch engine.Batch
				batch.Upsert(docFor("w0-003", a))
				if !tamper {
					batch.Upsert(docFor("w0-004", b))
				}
				if _, err := f.cs["c"].ExecuteBatch(context.Background(), &batch); err != nil {
					t.Fatal(err)
				}
				return fakeT0 + 5
			},
			expect: "is torn",
		},
		{
			// The clock ran backwards: a write acknowledged with a _ts
			// below the engine's now at its start.
			name: "clock backwards",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				f.clock(fakeT0 + 100)
				f.clock(fakeT0 + 20) // the wall goes back; the engine's now must not
				if tamper {
					f.emit("start r0.w1.0 c2 upsert w1-000 %s", never("a"))
					f.emit(`ack r0.w1.0 "ffff" %d`, fakeT0+20)
					return fakeT0 + 5
				}
				f.write("r0.w1.0", "c2", "upsert", "w1-000", never("a"))
				return fakeT0 + 5
			},
			expect: "its clock ran backwards",
		},
		{
			// A read of an own id found nothing although its write is
			// live: an acknowledged write lost mid-round.
			name: "read lost",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				it := f.write("r0.w0.0", "c", "upsert", "w0-005", never("a"))
				if tamper {
					f.emit("read %d c w0-005 -", f.step)
				} else {
					f.emit("read %d c w0-005 %s %d %s", f.step, never("a"), it.TS, it.ETag)
				}
				return fakeT0 + 5
			},
			expect: "a read of \"w0-005\" found nothing",
		},
	}
	// A write whose item expires seconds after it, and its ttl.
	short := func(p string) (string, int64) {
		for i := range 10000 {
			w := fmt.Sprintf("%s.%d", p, i)
			if ttl := ttlOf(w); ttl >= 5 && ttl <= 60 {
				return w, int64(ttl)
			}
		}
		t.Fatal("no tag with a ttl of seconds")
		return "", 0
	}
	// expireStep moves the clock to e, or with tamper only logs that it did:
	// a round whose engine never saw time reach e, as if the engine had
	// lost it in the crash.
	expireStep := func(f *fakeChild, e int64, tamper bool) {
		if !tamper {
			f.clock(e)
			return
		}
		f.step++
		f.emit("clock %d %d %d", f.step, e, e)
		f.emit("clocked %d", f.step)
	}
	cases = append(cases, []struct {
		name   string
		run    func(t *testing.T, f *fakeChild, tamper bool) int64
		expect string
	}{
		{
			// A read found an item expired at e, so the engine's now after
			// the restart must be at least e: if it is below, the item is
			// visible again (and live by its expiry at that now).
			name: "item read as expired comes back",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				w, ttl := short("a")
				it := f.write("r0.w0.0", "c", "create", "w0-006", w)
				expireStep(f, it.TS+ttl, tamper)
				if !tamper {
					if _, err := f.cs["c"].Read(context.Background(), "w0-006"); !errors.Is(err, engine.ErrNotFound) {
						t.Fatalf("read at the expiry: %v, want ErrNotFound", err)
					}
				}
				f.emit("read %d c w0-006 -", f.step)
				return fakeT0 + 1
			},
			expect: "an item seen expired can come back",
		},
		{
			// The same with a Replace refused because the item expired.
			name: "item refused as expired comes back",
			run: func(t *testing.T, f *fakeChild, tamper bool) int64 {
				w, ttl := short("a")
				it := f.write("r0.w0.0", "c", "create", "w0-007", w)
				expireStep(f, it.TS+ttl, tamper)
				w = never("b")
				f.emit("start r0.w0.1 c replace w0-007 %s", w)
				if !tamper {
					if _, err := f.cs["c"].Replace(context.Background(), docFor("w0-007", w)); !errors.Is(err, engine.ErrNotFound) {
						t.Fatalf("replace at the expiry: %v, want ErrNotFound", err)
					}
				}
				f.emit("nack r0.w0.1 %s", reasonNotFound)
				return fakeT0 + 1
			},
			expect: "an item seen expired can come back",
		},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, tamper := range []bool{false, true} {
				f := newFakeChild(t)
				wall := tc.run(t, f, tamper)
				got := f.check(wall)
				switch {
				case !tamper && got != "":
					t.Fatalf("untampered: violation %s", got)
				case tamper && !strings.Contains(got, tc.expect):
					t.Fatalf("tampered: got %q, want a violation containing %q", got, tc.expect)
				case tamper:
					t.Logf("caught: %s", got)
				}
			}
		})
	}
}

// TestRoundRelied checks which answers of a round log raise the floor of
// the now after the restart: a read or refusal that found an own id
// expired does, at its expiry; one that may have found it absent, or
// refused for a conflict, does not.
func TestRoundRelied(t *testing.T) {
	const t0 = fakeT0
	var a, b string // writes whose items expire 5 to 60 s after them, a first
	var ea, eb int64
	for i := 0; b == ""; i++ {
		w := fmt.Sprintf("x.%d", i)
		switch ttl := int64(ttlOf(w)); {
		case ttl < 5 || ttl > 60:
		case a == "":
			a, ea = w, t0+ttl
		case t0+ttl > ea:
			b, eb = w, t0+ttl
		}
	}
	head := []string{
		"created c", "created c2", "created clock",
		fmt.Sprintf("clock 0 %d %d", t0, t0),
		"start r0.k0 clock upsert probe r0.k0", fmt.Sprintf("ack r0.k0 e0 %d", t0), "clocked 0",
		"ready",
		"start r0.w0.0 c create w0-000 " + a, fmt.Sprintf("ack r0.w0.0 e1 %d", t0),
		"start r0.w0.1 c create w0-001 " + b, fmt.Sprintf("ack r0.w0.1 e2 %d", t0),
		fmt.Sprintf("clock 1 %d %d", eb, eb), "clocked 1",
	}
	cases := []struct {
		name  string
		lines []string
		want  int64
	}{
		{"no answer", nil, 0},
		{"read found it expired", []string{"read 1 c w0-000 -"}, ea},
		{"the later of two reads", []string{"read 1 c w0-001 -", "read 1 c w0-000 -"}, eb},
		{"read of an id never written", []string{"read 1 c w0-009 -"}, 0},
		{"delete refused", []string{"start r0.w0.2 c delete w0-001 -", "nack r0.w0.2 notfound"}, eb},
		{"IfMatch upsert refused", []string{"start r0.w0.2 c upsert! w0-000 x", "nack r0.w0.2 precondition"}, ea},
		{"batch: either op may be the refused one", []string{"start r0.w0.2 c replace w0-000 x replace w0-001 y", "nack r0.w0.2 notfound"}, ea},
		{"batch: one op may be refused as absent", []string{"start r0.w0.2 c replace w0-001 x replace w0-009 y", "nack r0.w0.2 notfound"}, 0},
		{"create refused for a conflict", []string{"start r0.w0.2 c create w0-002 x", fmt.Sprintf("ack r0.w0.2 e3 %d", eb),
			"start r0.w0.3 c create w0-002 y", "nack r0.w0.3 conflict"}, 0},
	}
	for _, tc := range cases {
		r := newRoundLog(0, newModel(), t0)
		for _, l := range append(append([]string{}, head...), tc.lines...) {
			r.add(l)
		}
		if r.violation != nil {
			t.Errorf("%s: violation %s", tc.name, r.violation.What)
			continue
		}
		if r.relied != tc.want {
			t.Errorf("%s: relied on %d, want %d", tc.name, r.relied, tc.want)
		}
	}
}
