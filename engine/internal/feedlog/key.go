// Package feedlog is what the engine's change feed and the offline tools
// (ebb feed) share: the order of a container's changes, their LSNs and
// continuation tokens (key.go), and the derivation of the changes from an
// item's stored versions and the container's policy history (derive.go).
// It does no I/O.
package feedlog

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The order of a container's change feed, its LSNs and its continuation
// tokens.
//
// Every change has a key, and the feed is in key order:
//
//	(T, S, class, M, V, ID)
//
// A write (create, replace, delete) has T = its _ts, S = its journal seq,
// class 1, V = S. An expiry has T = the instant the item expired, class 0,
// V = the seq of the version that expired, and S = 0, so that it comes
// after every write whose _ts is earlier and before every write whose _ts
// is the same or later; an expiry caused by a DefaultTTL change has S = the
// journal's next seq when the change took effect (the container's feed
// marks), so that it also comes after the writes committed before the
// change in the same second. Two DefaultTTL changes with no write between
// them share S; M is the rank of the change among those (0 for the first,
// and for every change that is not one of them), so that the expiries of a
// later change come after those of an earlier one in the same second,
// whichever versions they expire. The ID breaks the tie between the items
// of one batch, which share their seq. Since _ts never decreases along the
// journal, writes are in journal order, and a change that becomes durable
// later always has a greater key than one read before: the key is what a
// continuation resumes after.
//
// The LSN is a uint64 that grows with the key and is fixed by the stored
// versions, so that it is the same in every read of the feed, after a
// restart or a crash too. A write's LSN is seq<<LSNShift | its item's rank
// by id among its batch's items. An expiry's LSN counts on from the last
// write before it in the feed (its anchor): anchorSeq<<LSNShift + LSNGap +
// its rank among the expiries after that anchor. Writes of the container
// after the anchor have a seq above it, so the expiries fit in between. The
// limits: seqs below 2^44, and at most 2^19 expiries between two writes of
// the container with no write to another container between them (beyond
// it the feed fails rather than repeat an LSN).

// Key is a change's place in the feed.
type Key struct {
	T     int64
	S     uint64
	Class uint8  // ClassExpiry or ClassWrite
	M     uint32 // an expiry's DefaultTTL change among those sharing S (above); 0 for a write
	V     uint64
	ID    string
}

// The classes of Key: at one (T, S), expiries come first.
const (
	ClassExpiry uint8 = 0
	ClassWrite  uint8 = 1
)

// Compare orders keys as the feed does: -1, 0 or +1.
func Compare(a, b *Key) int {
	if c := cmp.Compare(a.T, b.T); c != 0 {
		return c
	}
	if c := cmp.Compare(a.S, b.S); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Class, b.Class); c != 0 {
		return c
	}
	if c := cmp.Compare(a.M, b.M); c != 0 {
		return c
	}
	if c := cmp.Compare(a.V, b.V); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// LSN layout (see above).
const (
	LSNShift  = 20
	LSNGap    = 1 << 19 // where a seq's expiries start, after its batch's writes
	LSNMaxSeq = 1<<(64-LSNShift) - 1
)

// WriteLSN is the LSN of the write of seq whose id has rank in its batch.
func WriteLSN(seq uint64, rank int) (uint64, error) {
	if seq > LSNMaxSeq || rank >= LSNGap {
		return 0, fmt.Errorf("journal seq %d (batch item %d) is beyond the feed's LSN range", seq, rank)
	}
	return seq<<LSNShift | uint64(rank), nil
}

// ExpiryLSN is the LSN of the rank-th expiry after the write anchor, given
// that the container's next write after the anchor has a seq of at least
// limit.
func ExpiryLSN(anchor uint64, rank int, limit uint64) (uint64, error) {
	if anchor > LSNMaxSeq || limit > LSNMaxSeq+1 {
		return 0, fmt.Errorf("journal seq %d is beyond the feed's LSN range", anchor)
	}
	lsn := anchor<<LSNShift + LSNGap + uint64(rank)
	if limit <= LSNMaxSeq && lsn >= limit<<LSNShift {
		return 0, fmt.Errorf("%d expiries after journal entry %d, with no write between them: beyond the feed's LSN range", rank+1, anchor)
	}
	return lsn, nil
}

// The continuation token: "ebbfeed1" and the container's number, then the
// key's fields, separated by dots, the id in unpadded base64url, and M last
// when it is not 0 (so that the tokens of every other change read as they
// did before M existed):
//
//	ebbfeed1.<container>.<T>.<S>.<class>.<V>.<base64url(id)>[.<M>]
const TokenPrefix = "ebbfeed1"

// ErrBadToken is wrapped by every continuation parse error.
var ErrBadToken = errors.New("malformed continuation token")

func (k *Key) Token(container uint32) string {
	t := fmt.Sprintf("%s.%d.%d.%d.%d.%d.%s", TokenPrefix, container, k.T, k.S, k.Class, k.V,
		base64.RawURLEncoding.EncodeToString([]byte(k.ID)))
	if k.M != 0 {
		t += "." + strconv.FormatUint(uint64(k.M), 10)
	}
	return t
}

// MaxToken bounds a token's length: an item key (an id of 255 characters
// of up to 4 bytes, behind a partition key value of up to 2048 bytes that
// its encoding may double, package engine/internal/pkey) in base64, and
// the numbers.
const MaxToken = 8192

// ParseToken decodes a continuation token of container's feed. Its
// errors wrap ErrBadToken and say what is wrong.
func ParseToken(s string, container uint32) (Key, error) {
	bad := func(format string, args ...any) (Key, error) {
		return Key{}, fmt.Errorf("%w: %s", ErrBadToken, fmt.Sprintf(format, args...))
	}
	if len(s) > MaxToken {
		return bad("%d bytes, more than %d", len(s), MaxToken)
	}
	parts := strings.Split(s, ".")
	if (len(parts) != 7 && len(parts) != 8) || parts[0] != TokenPrefix {
		return bad("%q does not have the form %s.<container>.<ts>.<seq>.<class>.<version>.<id>[.<change>]", s, TokenPrefix)
	}
	num, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return bad("container %q is not a number", parts[1])
	}
	if uint32(num) != container {
		return bad("it belongs to another container's feed")
	}
	var k Key
	if k.T, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return bad("ts %q is not a number", parts[2])
	}
	if k.S, err = strconv.ParseUint(parts[3], 10, 64); err != nil {
		return bad("seq %q is not a number", parts[3])
	}
	class, err := strconv.ParseUint(parts[4], 10, 8)
	if err != nil || (uint8(class) != ClassExpiry && uint8(class) != ClassWrite) {
		return bad("class %q is not 0 or 1", parts[4])
	}
	k.Class = uint8(class)
	if k.V, err = strconv.ParseUint(parts[5], 10, 64); err != nil {
		return bad("version %q is not a number", parts[5])
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[6])
	if err != nil {
		return bad("id %q is not base64url", parts[6])
	}
	if len(id) == 0 || !utf8.Valid(id) {
		return bad("id is empty or not UTF-8")
	}
	k.ID = string(id)
	if k.Class == ClassWrite && k.S != k.V {
		return bad("a write's seq %d and version %d differ", k.S, k.V)
	}
	if len(parts) == 8 {
		m, err := strconv.ParseUint(parts[7], 10, 32)
		switch {
		case err != nil:
			return bad("change %q is not a number", parts[7])
		case m == 0:
			return bad("change 0 is written without its field") // one token per key
		case k.Class != ClassExpiry || k.S == 0:
			return bad("only the expiry of a DefaultTTL change has a change rank")
		}
		k.M = uint32(m)
	}
	if k.T == math.MinInt64 {
		return bad("ts %d is out of range", k.T)
	}
	return k, nil
}
