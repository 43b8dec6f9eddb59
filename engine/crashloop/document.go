package crashloop

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/testdoc"
)

// The documents of the workload are pure functions of the item id and the
// write's tag (w), so that any body read back can be checked byte for byte
// against the write it names, and the checker knows every write's ttl from
// its tag alone.

func hashOf(s string) uint64 { return testdoc.Hash(s) }

// ttlOf is the item ttl that write w puts in its document: 0 (absent), -1,
// a large one, two hours (which a forward clock leap ends), or 5 to 60
// seconds (which expire during the round as the clock ticks).
func ttlOf(w string) int32 {
	h := hashOf(w)
	switch h % 16 {
	case 0, 1, 2, 3, 4:
		return 0
	case 5, 6, 7:
		return -1
	case 8:
		return 1_000_000
	case 9, 10:
		return 7200
	default:
		return 5 + int32(h>>32%56)
	}
}

// docFor is the document that write w stores in item id.
func docFor(id, w string) []byte { return testdoc.Doc(id, w, ttlOf(w)) }

// writeOf returns the tag of the write that item it claims to be, and
// checks that its body is exactly that write's document with the item's
// system properties: id, _ts and _etag agreeing with it.
func writeOf(it engine.Item) (string, error) {
	var got map[string]any
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return "", fmt.Errorf("item %q: body is not JSON: %v (%.200s)", it.ID, err, it.Body)
	}
	w, _ := got["w"].(string)
	if w == "" {
		return "", fmt.Errorf("item %q: body names no write (%.200s)", it.ID, it.Body)
	}
	if got["id"] != it.ID {
		return "", fmt.Errorf("item %q: body id %v", it.ID, got["id"])
	}
	if got["_ts"] != float64(it.TS) || got["_etag"] != it.ETag {
		return "", fmt.Errorf("item %q: body _ts %v _etag %v, the Item says TS %d ETag %s", it.ID, got["_ts"], got["_etag"], it.TS, it.ETag)
	}
	delete(got, "_ts")
	delete(got, "_etag")
	var want map[string]any
	if err := json.Unmarshal(docFor(it.ID, w), &want); err != nil {
		return "", fmt.Errorf("item %q: document of write %s: %v", it.ID, w, err)
	}
	if !reflect.DeepEqual(got, want) {
		return "", fmt.Errorf("item %q: body %.300s is not the document of write %s", it.ID, it.Body, w)
	}
	return w, nil
}
