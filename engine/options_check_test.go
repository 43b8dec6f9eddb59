package engine

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/segment"
)

// TestOpenRefusesInvalidOptions walks every field of Options: each field
// that has values outside its range is set to each of them in turn, and
// Open must fail with ErrInvalidOptions naming the field, creating
// nothing; a field without such values must say so here, so that a new
// field cannot go unchecked. All the bad values at once are named in one
// error, and the largest valid values open.
func TestOpenRefusesInvalidOptions(t *testing.T) {
	bad := map[string][]any{
		"JournalSegmentSize": {-1, maxJournalSegmentSize + 1},
		"SealThreshold":      {int64(-1), int64(math.MinInt64), int64(maxSealThreshold + 1)},
		"BlockSize":          {-1, segment.MaxBlockSize + 1, 128 << 20},
		"BlockCacheSize":     {int64(-1)},
		"CompactionRate":     {int64(-64 << 20)},
		"RewriteThreshold":   {-0.1, 1.5, math.NaN(), math.Inf(1)},
		"MaxBatchOperations": {-1, maxBatchOperations + 1},
		"MaxBatchBytes":      {-1, maxBatchBytes + 1},
		"Compression":        {CompressionNone + 1},
	}
	// Fields every value of which is valid.
	anyValue := map[string]string{
		"Clock":              "nil is time.Now; any clock is followed as its doc says",
		"NoSync":             "a bool",
		"NoWarmup":           "a bool",
		"CompactionInterval": "negative turns the background compactor off",
		"Logger":             "nil discards",
		"FS":                 "nil is the OS",
	}
	typ := reflect.TypeOf(Options{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		_, b := bad[name]
		_, a := anyValue[name]
		if b == a {
			t.Errorf("Options.%s: list it in exactly one of the test's tables (bad values, or any value valid)", name)
		}
	}

	open := func(o *Options) (string, error) {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := Open(dir, o)
		if err == nil {
			db.Close()
		}
		return dir, err
	}
	var all Options
	for name, values := range bad {
		for _, v := range values {
			var o Options
			f := reflect.ValueOf(&o).Elem().FieldByName(name)
			f.Set(reflect.ValueOf(v).Convert(f.Type()))
			dir, err := open(&o)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), name+" ") {
				t.Errorf("Open with %s = %v: %v, want ErrInvalidOptions naming %s", name, v, err, name)
			}
			if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("Open with %s = %v created %s", name, v, dir)
			}
			if _, err := ResetClock(dir, &o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("ResetClock with %s = %v: %v, want ErrInvalidOptions", name, v, err)
			}
			reflect.ValueOf(&all).Elem().FieldByName(name).Set(f)
		}
	}
	_, err := open(&all)
	for name := range bad {
		if err == nil || !strings.Contains(err.Error(), name+" ") {
			t.Errorf("Open with every field bad: %v does not name %s", err, name)
		}
	}

	edge := Options{JournalSegmentSize: maxJournalSegmentSize, BlockSize: segment.MaxBlockSize, RewriteThreshold: 1,
		MaxBatchOperations: maxBatchOperations, MaxBatchBytes: maxBatchBytes, Compression: CompressionNone,
		SealThreshold: maxSealThreshold, CompactionRate: math.MaxInt64, BlockCacheSize: 1, CompactionInterval: -1}
	db, err := Open(filepath.Join(t.TempDir(), "db"), &edge)
	if err != nil {
		t.Fatalf("Open with the largest valid values: %v", err)
	}
	defer db.Close()
	// They work, not only open: a write, a read, a seal and a compaction.
	ctx := t.Context()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","v":1}`)); err != nil {
		t.Fatal(err)
	}
	forceSeal(t, db)
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Read(ctx, "a"); err != nil || it.ID != "a" {
		t.Fatalf("Read after seal and compaction: %v, %v", it.ID, err)
	}
}
