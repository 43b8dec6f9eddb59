// Package testdoc makes the documents of ebb's crash tests: each a pure
// function of the item id and the write's tag, so that any body read back
// can be checked byte for byte against the write it claims to be. It is
// shared by the engine's own tests and the crash loop (engine/crashloop),
// which cannot import each other.
package testdoc

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"github.com/ebbdb/ebb/policy"
)

// Hash is the FNV-1a hash of s, from which a tag's document and ttl derive.
func Hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Doc is the document that write w stores in item id, with "ttl": ttl
// unless ttl is 0: 20 to 420 bytes of padding derived from w, and now and
// then a few kilobytes, so that documents fill blocks.
func Doc(id, w string, ttl int32) []byte {
	h := Hash(w)
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
	if ttl != 0 {
		fmt.Fprintf(&b, `,"ttl":%d`, ttl)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// State is what a crash test knows an item to be: absent, or the version
// that write W stored at TS with ETag (ETag "" when the test does not know
// it, as for a write in flight at a crash). It is the one item model of the
// crash loop (engine/crashloop) and the engine's crash and damage tests.
type State struct {
	Present bool
	W       string
	TS      int64
	ETag    string
}

func (s State) String() string {
	if !s.Present {
		return "absent"
	}
	e := s.ETag
	if e == "" {
		e = "?"
	}
	return fmt.Sprintf("%s@%d etag %s", s.W, s.TS, e)
}

// ExpiresAt is the first instant at which s is invisible under the
// container's DefaultTTL history h, its document's ttl being itemTTL (0 when
// absent); 0 when s is absent.
func (s State) ExpiresAt(h policy.History, itemTTL int32) int64 {
	if !s.Present {
		return 0
	}
	return h.ExpiresAt(s.TS, itemTTL)
}

// Visible reports whether s is visible at now.
func (s State) Visible(h policy.History, itemTTL int32, now int64) bool {
	return s.Present && s.ExpiresAt(h, itemTTL) > now
}
