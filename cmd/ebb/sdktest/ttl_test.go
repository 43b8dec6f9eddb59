package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The TTL tests wait for the real clock. ebb, like Cosmos DB, stamps _ts in
// whole Unix seconds and treats an item as expired at now when
// _ts + ttl <= now. A check is only asserted when its outcome is certain
// from the client's clock: present when the response arrived before
// _ts + ttl, absent when the request left at or after it. Checks that fall
// in between prove nothing and are not asserted, so a slow machine makes
// the tests longer, never flaky.

// unixNow is the wall clock as fractional Unix seconds.
func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// sleepUntil sleeps until the wall clock reaches the whole second sec.
func sleepUntil(sec int64) {
	if d := time.Until(time.Unix(sec, 0)); d > 0 {
		time.Sleep(d + 20*time.Millisecond)
	}
}

// systemTS returns the _ts of an item body.
func systemTS(t testing.TB, body []byte) int64 {
	t.Helper()
	var sys struct {
		TS *int64 `json:"_ts"`
	}
	if err := json.Unmarshal(body, &sys); err != nil || sys.TS == nil {
		t.Fatalf("item body has no numeric _ts (%v): %s", err, body)
	}
	return *sys.TS
}

var withContent = &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}

// createRaw creates an item from raw JSON and returns its _ts.
func createRaw(t testing.TB, c *azcosmos.ContainerClient, pk, doc string) int64 {
	t.Helper()
	resp, err := c.CreateItem(context.Background(), azcosmos.NewPartitionKeyString(pk), []byte(doc), withContent)
	if err != nil {
		t.Fatalf("create %s: %v", doc, err)
	}
	return systemTS(t, resp.Value)
}

// listIDs returns the ids a single-partition query finds.
func listIDs(t testing.TB, c *azcosmos.ContainerClient, pk string) []string {
	t.Helper()
	var ids []string
	pager := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKeyString(pk), nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query SELECT VALUE c.id FROM c: %v", err)
		}
		for _, raw := range page.Items {
			var id string
			if err := json.Unmarshal(raw, &id); err != nil {
				t.Fatalf("query result %s is not a string: %v", raw, err)
			}
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestTTLMatrix crosses a container defaultTtl of absent, -1 and 2 with an
// item ttl of absent, -1, 1 and 3 and watches every item until its expiry
// instant has passed: alive before it, gone from point reads and queries at
// once after it, never expiring where the rules say so.
func TestTTLMatrix(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "ttlMatrix")
	containers := []struct {
		name string
		def  *int32
	}{{"off", nil}, {"never", ptr[int32](-1)}, {"n2", ptr[int32](2)}}
	items := []struct {
		id  string
		ttl string // the raw JSON value, "" for absent
	}{{"none", ""}, {"forever", "-1"}, {"m1", "1"}, {"m3", "3"}}
	// life[container][item]: seconds after _ts until expiry, 0 for never.
	life := map[string]map[string]int64{
		"off":   {"none": 0, "forever": 0, "m1": 0, "m3": 0},
		"never": {"none": 0, "forever": 0, "m1": 1, "m3": 3},
		"n2":    {"none": 2, "forever": 0, "m1": 1, "m3": 3},
	}

	type watched struct {
		c        *azcosmos.ContainerClient
		cname    string
		id       string
		expiry   int64 // _ts + effective ttl; 0 for never
		sawAlive bool
		sawGone  bool
	}
	var all []*watched
	clients := map[string]*azcosmos.ContainerClient{}
	var last int64
	for _, cn := range containers {
		c := newContainer(t, db, cn.name, "/pk", cn.def)
		clients[cn.name] = c
		for _, it := range items {
			doc := fmt.Sprintf(`{"id":%q,"pk":"p"}`, it.id)
			if it.ttl != "" {
				doc = fmt.Sprintf(`{"id":%q,"pk":"p","ttl":%s}`, it.id, it.ttl)
			}
			ts := createRaw(t, c, "p", doc)
			w := &watched{c: c, cname: cn.name, id: it.id}
			if l := life[cn.name][it.id]; l > 0 {
				w.expiry = ts + l
				if w.expiry > last {
					last = w.expiry
				}
			}
			all = append(all, w)
		}
	}

	for round := 0; ; round++ {
		done := unixNow() >= float64(last)+0.3 && round > 0
		for cname, c := range clients {
			before := unixNow()
			ids := listIDs(t, c, "p")
			after := unixNow()
			for _, w := range all {
				if w.cname != cname {
					continue
				}
				alive := w.expiry == 0 || after < float64(w.expiry)
				gone := w.expiry != 0 && before >= float64(w.expiry)
				if alive && !contains(ids, w.id) {
					t.Errorf("round %d: container %s: query misses %s before its expiry at %d (ids %v)", round, cname, w.id, w.expiry, ids)
				}
				if gone && contains(ids, w.id) {
					t.Errorf("round %d: container %s: query still returns %s, expired at %d (now %.2f)", round, cname, w.id, w.expiry, before)
				}
			}
		}
		for _, w := range all {
			before := unixNow()
			_, err := w.c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString("p"), w.id, nil)
			after := unixNow()
			switch {
			case w.expiry == 0 || after < float64(w.expiry):
				if err != nil {
					t.Errorf("round %d: container %s: read %s before its expiry (%d): %v", round, w.cname, w.id, w.expiry, err)
				}
				w.sawAlive = true
			case before >= float64(w.expiry):
				if statusOf(err) != 404 {
					t.Errorf("round %d: container %s: read %s at %.2f, expired at %d: got err=%v, want 404", round, w.cname, w.id, before, w.expiry, err)
				}
				w.sawGone = true
			}
		}
		if t.Failed() || done {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, w := range all {
		if w.expiry != 0 && !w.sawGone {
			t.Errorf("container %s: item %s was never checked after its expiry", w.cname, w.id)
		}
		if w.expiry == 0 && !w.sawAlive {
			t.Errorf("container %s: item %s was never read", w.cname, w.id)
		}
	}
}

// TestTTLWriteRestartsClock shows that a replace, an upsert and a patch each
// restart an item's clock: the item outlives the expiry it had before the
// write and expires ttl seconds after the write's _ts, while an item that
// was not written again expires on time.
func TestTTLWriteRestartsClock(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "ttlRestart")
	const ttl = 3
	c := newContainer(t, db, "c", "/pk", ptr[int32](ttl))
	pk := azcosmos.NewPartitionKeyString("p")
	writes := map[string]func(id string) (*azcosmos.ItemResponse, error){
		"replace": func(id string) (*azcosmos.ItemResponse, error) {
			r, err := c.ReplaceItem(context.Background(), pk, id, []byte(fmt.Sprintf(`{"id":%q,"pk":"p","v":2}`, id)), withContent)
			return &r, err
		},
		"upsert": func(id string) (*azcosmos.ItemResponse, error) {
			r, err := c.UpsertItem(context.Background(), pk, []byte(fmt.Sprintf(`{"id":%q,"pk":"p","v":2}`, id)), withContent)
			return &r, err
		},
		"patch": func(id string) (*azcosmos.ItemResponse, error) {
			var ops azcosmos.PatchOperations
			ops.AppendSet("/v", 2)
			r, err := c.PatchItem(context.Background(), pk, id, ops, withContent)
			return &r, err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for attempt := 1; attempt <= 3; attempt++ {
				id := fmt.Sprintf("%s-%d", name, attempt)
				ctl := "control-" + id
				ts1 := createRaw(t, c, "p", fmt.Sprintf(`{"id":%q,"pk":"p","v":1}`, id))
				tsCtl := createRaw(t, c, "p", fmt.Sprintf(`{"id":%q,"pk":"p"}`, ctl))

				sleepUntil(ts1 + ttl - 1)
				before := unixNow()
				resp, err := write(id)
				after := unixNow()
				if err != nil {
					if after < float64(ts1+ttl) {
						t.Fatalf("%s of %s before its expiry at %d: %v", name, id, ts1+ttl, err)
					}
					t.Logf("attempt %d: the %s reached the server after the item expired; again", attempt, name)
					continue
				}
				ts2 := systemTS(t, resp.Value)
				if float64(ts2) < float64(int64(before)) {
					t.Fatalf("%s of %s sent at %.2f returned _ts %d, before it was sent", name, id, before, ts2)
				}

				// The old expiry has passed: the written item lives on.
				sleepUntil(ts1 + ttl)
				before = unixNow()
				_, err = c.ReadItem(context.Background(), pk, id, nil)
				after = unixNow()
				conclusive := after < float64(ts2+ttl) && before >= float64(ts1+ttl)
				if conclusive && err != nil {
					t.Fatalf("read of %s after its old expiry %d but before its new one %d (the %s at _ts %d): %v", id, ts1+ttl, ts2+ttl, name, ts2, err)
				}
				// The control item, not written again, is gone.
				sleepUntil(tsCtl + ttl)
				_, err = c.ReadItem(context.Background(), pk, ctl, nil)
				if statusOf(err) != 404 {
					t.Fatalf("read of %s, expired at %d: got %v, want 404", ctl, tsCtl+ttl, err)
				}
				// And the written item expires ttl seconds after the write.
				sleepUntil(ts2 + ttl)
				_, err = c.ReadItem(context.Background(), pk, id, nil)
				if statusOf(err) != 404 {
					t.Fatalf("read of %s, expired at %d after the %s: got %v, want 404", id, ts2+ttl, name, err)
				}
				if ids := listIDs(t, c, "p"); contains(ids, id) || contains(ids, ctl) {
					t.Fatalf("query still lists expired %s or %s: %v", id, ctl, ids)
				}
				if conclusive {
					return
				}
				t.Logf("attempt %d: the read after the old expiry was too late to tell; again", attempt)
			}
			t.Skip("machine too slow: three attempts could not observe the restarted clock within its one-second window")
		})
	}
}
