package crashloop

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strings"

	"github.com/ebbdb/ebb/engine"
)

// The documents of the workload are pure functions of the item id and the
// write's tag (w), so that any body read back can be checked byte for byte
// against the write it names, and the checker knows every write's ttl from
// its tag alone.

func hashOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

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
func docFor(id, w string) []byte {
	h := hashOf(w)
	n := 20 + int(h>>8%400)
	if h>>20%16 == 0 {
		n = 2000 + int(h>>24%5000) // a few large ones fill blocks
	}
	r := rand.New(rand.NewPCG(h, 0x9e3779b97f4a7c15))
	pad := make([]byte, n)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range pad {
		pad[i] = alphabet[r.IntN(len(alphabet))]
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"w":%q,"n":{"h":%d,"a":[1,"two",null,true]},"pad":"%s"`, id, w, h%1_000_000, pad)
	if ttl := ttlOf(w); ttl != 0 {
		fmt.Fprintf(&b, `,"ttl":%d`, ttl)
	}
	b.WriteString("}")
	return []byte(b.String())
}

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
