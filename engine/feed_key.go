package engine

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
//	(T, S, class, V, ID)
//
// A write (create, replace, delete) has T = its _ts, S = its journal seq,
// class 1, V = S. An expiry has T = the instant the item expired, class 0,
// V = the seq of the version that expired, and S = 0, so that it comes
// after every write whose _ts is earlier and before every write whose _ts
// is the same or later; an expiry caused by a DefaultTTL change has S = the
// journal's next seq when the change took effect (the container's feed
// marks), so that it also comes after the writes committed before the
// change in the same second. The ID breaks the tie between the items of one
// batch, which share their seq. Since _ts never decreases along the
// journal, writes are in journal order, and a change that becomes durable
// later always has a greater key than one read before: the key is what a
// continuation resumes after.
//
// The LSN is a uint64 that grows with the key and is fixed by the stored
// versions, so that it is the same in every read of the feed, after a
// restart or a crash too. A write's LSN is seq<<lsnShift | its item's rank
// by id among its batch's items. An expiry's LSN counts on from the last
// write before it in the feed (its anchor): anchorSeq<<lsnShift + lsnGap +
// its rank among the expiries after that anchor. Writes of the container
// after the anchor have a seq above it, so the expiries fit in between. The
// limits: seqs below 2^44, and at most 2^19 expiries between two writes of
// the container with no write to another container between them (beyond
// it the feed fails rather than repeat an LSN).

// feedKey is a change's place in the feed.
type feedKey struct {
	T     int64
	S     uint64
	Class uint8 // classExpiry or classWrite
	V     uint64
	ID    string
}

// The classes of feedKey: at one (T, S), expiries come first.
const (
	classExpiry uint8 = 0
	classWrite  uint8 = 1
)

func compareFeedKeys(a, b *feedKey) int {
	if c := cmp.Compare(a.T, b.T); c != 0 {
		return c
	}
	if c := cmp.Compare(a.S, b.S); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Class, b.Class); c != 0 {
		return c
	}
	if c := cmp.Compare(a.V, b.V); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// LSN layout (see above).
const (
	lsnShift  = 20
	lsnGap    = 1 << 19 // where a seq's expiries start, after its batch's writes
	lsnMaxSeq = 1<<(64-lsnShift) - 1
)

// writeLSN is the LSN of the write of seq whose id has rank in its batch.
func writeLSN(seq uint64, rank int) (uint64, error) {
	if seq > lsnMaxSeq || rank >= lsnGap {
		return 0, fmt.Errorf("journal seq %d (batch item %d) is beyond the feed's LSN range", seq, rank)
	}
	return seq<<lsnShift | uint64(rank), nil
}

// expiryLSN is the LSN of the rank-th expiry after the write anchor, given
// that the container's next write after the anchor has a seq of at least
// limit.
func expiryLSN(anchor uint64, rank int, limit uint64) (uint64, error) {
	if anchor > lsnMaxSeq || limit > lsnMaxSeq+1 {
		return 0, fmt.Errorf("journal seq %d is beyond the feed's LSN range", anchor)
	}
	lsn := anchor<<lsnShift + lsnGap + uint64(rank)
	if limit <= lsnMaxSeq && lsn >= limit<<lsnShift {
		return 0, fmt.Errorf("%d expiries after journal entry %d, with no write between them: beyond the feed's LSN range", rank+1, anchor)
	}
	return lsn, nil
}

// The continuation token: "ebbfeed1" and the container's number, then the
// key's fields, separated by dots, the id in unpadded base64url:
//
//	ebbfeed1.<container>.<T>.<S>.<class>.<V>.<base64url(id)>
const feedTokenPrefix = "ebbfeed1"

// errBadToken is wrapped by every continuation parse error.
var errBadToken = errors.New("malformed continuation token")

func (k *feedKey) token(container uint32) string {
	return fmt.Sprintf("%s.%d.%d.%d.%d.%d.%s", feedTokenPrefix, container, k.T, k.S, k.Class, k.V,
		base64.RawURLEncoding.EncodeToString([]byte(k.ID)))
}

// maxFeedToken bounds a token's length: an id of 255 characters of up to 4
// bytes, in base64, and the numbers.
const maxFeedToken = 2048

// parseFeedToken decodes a continuation token of container's feed. Its
// errors wrap errBadToken and say what is wrong.
func parseFeedToken(s string, container uint32) (feedKey, error) {
	bad := func(format string, args ...any) (feedKey, error) {
		return feedKey{}, fmt.Errorf("%w: %s", errBadToken, fmt.Sprintf(format, args...))
	}
	if len(s) > maxFeedToken {
		return bad("%d bytes, more than %d", len(s), maxFeedToken)
	}
	parts := strings.Split(s, ".")
	if len(parts) != 7 || parts[0] != feedTokenPrefix {
		return bad("%q does not have the form %s.<container>.<ts>.<seq>.<class>.<version>.<id>", s, feedTokenPrefix)
	}
	num, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return bad("container %q is not a number", parts[1])
	}
	if uint32(num) != container {
		return bad("it belongs to another container's feed")
	}
	var k feedKey
	if k.T, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return bad("ts %q is not a number", parts[2])
	}
	if k.S, err = strconv.ParseUint(parts[3], 10, 64); err != nil {
		return bad("seq %q is not a number", parts[3])
	}
	class, err := strconv.ParseUint(parts[4], 10, 8)
	if err != nil || (uint8(class) != classExpiry && uint8(class) != classWrite) {
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
	if k.Class == classWrite && k.S != k.V {
		return bad("a write's seq %d and version %d differ", k.S, k.V)
	}
	if k.T == math.MinInt64 {
		return bad("ts %d is out of range", k.T)
	}
	return k, nil
}
