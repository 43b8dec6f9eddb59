package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/internal/ttlvectors"
)

// TestVectorsMatrix runs every matrix case through the public API: a
// container with the case's DefaultTTL, one item with its ttl, reads at each
// offset. Each offset is checked on a fresh item, because expiry is final.
func TestVectorsMatrix(t *testing.T) {
	ctx := context.Background()
	v := ttlvectors.MustLoad(t)
	for _, tc := range v.Matrix {
		t.Run(tc.Name, func(t *testing.T) {
			clk := newFakeClock(t0)
			db := openTest(t, t.TempDir(), clk)
			defer db.Close()
			props := engine.ContainerProperties{ID: "c"}
			if tc.DefaultTTL != nil {
				props.DefaultTTL = engine.TTL(int32(*tc.DefaultTTL))
			}
			c := mustCreateContainer(t, db, props)
			check := func(offset int64, wantVisible bool) {
				id := fmt.Sprintf("item-%d", offset)
				doc := `{"id":"` + id + `"`
				if tc.ItemTTLJSON != nil {
					doc += `,"ttl":` + *tc.ItemTTLJSON
				}
				doc += "}"
				clk.Set(t0)
				written, err := c.Create(ctx, []byte(doc))
				if err != nil {
					t.Fatalf("Create(%s): %v", doc, err)
				}
				clk.Set(written.TS + offset)
				_, err = c.Read(ctx, id)
				switch {
				case wantVisible && err != nil:
					t.Errorf("offset %d: Read = %v, want the item", offset, err)
				case !wantVisible && !errors.Is(err, engine.ErrNotFound):
					t.Errorf("offset %d: Read = %v, want ErrNotFound", offset, err)
				}
				// A fresh database for the next offset: the engine clock never
				// runs backwards, so offsets cannot be revisited in one DB.
			}
			for _, off := range tc.VisibleAt {
				db.Close()
				clk.Set(t0)
				db = openTest(t, t.TempDir(), clk)
				c = mustCreateContainer(t, db, props)
				check(off, true)
			}
			for _, off := range tc.InvisibleAt {
				db.Close()
				clk.Set(t0)
				db = openTest(t, t.TempDir(), clk)
				c = mustCreateContainer(t, db, props)
				check(off, false)
			}
		})
	}
}

// TestVectorsItemTTL checks every valid and invalid item ttl of the vectors
// through Create, and that a rejected write leaves nothing behind.
func TestVectorsItemTTL(t *testing.T) {
	ctx := context.Background()
	v := ttlvectors.MustLoad(t)
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	for _, ttlOn := range []bool{true, false} {
		props := engine.ContainerProperties{ID: fmt.Sprintf("ttl-%v", ttlOn)}
		if ttlOn {
			props.DefaultTTL = engine.TTL(-1)
		}
		c := mustCreateContainer(t, db, props)
		for i, raw := range v.ItemTTLJSON.Valid {
			doc := fmt.Sprintf(`{"id":"v%d","ttl":%s}`, i, raw)
			if _, err := c.Create(ctx, []byte(doc)); err != nil {
				t.Errorf("TTL on=%v: Create(%s) = %v, want success", ttlOn, doc, err)
			}
		}
		for i, raw := range v.ItemTTLJSON.Invalid {
			doc := fmt.Sprintf(`{"id":"x%d","ttl":%s}`, i, raw)
			_, err := c.Create(ctx, []byte(doc))
			if !errors.Is(err, engine.ErrInvalidTTL) {
				t.Errorf("TTL on=%v: Create(%s) = %v, want ErrInvalidTTL", ttlOn, doc, err)
			}
			if _, err := c.Read(ctx, fmt.Sprintf("x%d", i)); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("TTL on=%v: rejected item x%d is readable: %v", ttlOn, i, err)
			}
		}
		if st := c.Stats(); st.Items != int64(len(v.ItemTTLJSON.Valid)) {
			t.Errorf("TTL on=%v: Stats.Items = %d, want %d", ttlOn, st.Items, len(v.ItemTTLJSON.Valid))
		}
	}
}

// TestVectorsDefaultTTL checks every DefaultTTL of the vectors through
// CreateContainer and SetProperties. Values beyond int32 cannot be passed
// as *int32; they are checked through the properties' JSON form.
func TestVectorsDefaultTTL(t *testing.T) {
	ctx := context.Background()
	v := ttlvectors.MustLoad(t)
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	base := mustCreateContainer(t, db, engine.ContainerProperties{ID: "base"})
	for i, d := range v.DefaultTTL.Valid {
		props := engine.ContainerProperties{ID: fmt.Sprintf("ok%d", i)}
		if d != nil {
			props.DefaultTTL = engine.TTL(int32(*d))
		}
		if _, err := db.CreateContainer(ctx, props); err != nil {
			t.Errorf("CreateContainer(defaultTtl %v) = %v", d, err)
		}
		if err := base.SetProperties(ctx, engine.ContainerProperties{ID: "base", DefaultTTL: props.DefaultTTL}); err != nil {
			t.Errorf("SetProperties(defaultTtl %v) = %v", d, err)
		}
	}
	for _, d := range v.DefaultTTL.Invalid {
		if d == nil {
			t.Fatalf("vectors list an absent defaultTtl as invalid")
		}
		js := fmt.Sprintf(`{"id":"bad","defaultTtl":%d}`, *d)
		var props engine.ContainerProperties
		err := json.Unmarshal([]byte(js), &props)
		if err == nil {
			_, err = db.CreateContainer(ctx, props)
			if !errors.Is(err, engine.ErrInvalidProperties) {
				t.Errorf("CreateContainer(defaultTtl %d) = %v, want ErrInvalidProperties", *d, err)
			}
			if err := base.SetProperties(ctx, props); !errors.Is(err, engine.ErrInvalidProperties) {
				t.Errorf("SetProperties(defaultTtl %d) = %v, want ErrInvalidProperties", *d, err)
			}
		} else if !errors.Is(err, engine.ErrInvalidProperties) {
			t.Errorf("unmarshal %s = %v, want ErrInvalidProperties", js, err)
		}
	}
	if _, err := db.Container("bad"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a container with an invalid defaultTtl exists: %v", err)
	}
}
