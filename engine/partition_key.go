package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/pkey"
)

// ErrInvalidPartitionKey: a partition key that does not fit the call: a
// point call (Read, Delete, NewBatch) on a container with a partition key
// made without naming the key (use Container.Partition), a document whose
// value at the key path differs from the key named, a value at the key
// path that is an object or an array, a key on a container without a key
// path, or a header that does not parse. The error says which.
var ErrInvalidPartitionKey = errors.New("ebb: invalid partition key")

// PartitionKey is one partition key value: a JSON string, number, boolean
// or null, or None (the item has no value at the key path; Cosmos DB's
// PartitionKey.None, `[{}]` in the header). Keys compare with ==: two keys
// are equal when Cosmos DB would hash them equal (numbers compare as
// float64, so 5 and 5.0 are one key). The zero value is None.
type PartitionKey struct{ k pkey.Key }

// StringKey is the partition key value s.
func StringKey(s string) PartitionKey { return PartitionKey{pkey.StringKey(s)} }

// NumberKey is the partition key value f (a finite number; -0 is 0).
func NumberKey(f float64) PartitionKey { return PartitionKey{pkey.NumberKey(f)} }

// BoolKey is the partition key value true or false.
func BoolKey(b bool) PartitionKey { return PartitionKey{pkey.BoolKey(b)} }

// NullKey is the partition key value null: the key path holds null.
func NullKey() PartitionKey { return PartitionKey{pkey.Key{Kind: pkey.Null}} }

// NoneKey is None: the item has no value at the key path. Items of a
// container without a partition key all have it.
func NoneKey() PartitionKey { return PartitionKey{} }

// ParsePartitionKey reads the x-ms-documentdb-partitionkey header form: a
// JSON array of one value: ["a"], [5], [true], [null], or [{}] for None;
// [] is also None. Anything else fails with ErrInvalidPartitionKey naming
// what is wrong.
func ParsePartitionKey(b []byte) (PartitionKey, error) {
	k, err := pkey.ParseHeader(b)
	if err != nil {
		return PartitionKey{}, fmt.Errorf("%w: %v", ErrInvalidPartitionKey, err)
	}
	return PartitionKey{k}, nil
}

// String is the header form of the key: `["a"]`, `[5]`, `[true]`,
// `[null]`, `[{}]`.
func (k PartitionKey) String() string { return k.k.String() }

// IsNone reports whether k is None.
func (k PartitionKey) IsNone() bool { return k.k.Kind == pkey.None }

// Value is the key as a Go value: string, float64, bool, or nil for null;
// nil for None too (tell them apart with IsNone).
func (k PartitionKey) Value() any { return k.k.Value() }

// check reports why k cannot key an item, wrapping ErrInvalidPartitionKey.
func (k PartitionKey) check() error {
	if err := k.k.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidPartitionKey, err)
	}
	return nil
}

// keyPath is a container's parsed partition key path: its segments,
// unescaped ("/address/city" is ["address", "city"]); nil for a container
// without a key.
type keyPath []string

// parseKeyPath validates a PartitionKeyPath and returns its segments; ""
// is no key. Errors name what is wrong and wrap ErrInvalidProperties.
func parseKeyPath(container, p string) (keyPath, error) {
	if p == "" {
		return nil, nil
	}
	bad := func(why string) (keyPath, error) {
		return nil, fmt.Errorf("%w: container %q: partition key path %q %s", ErrInvalidProperties, container, p, why)
	}
	if strings.ContainsRune(p, ',') {
		return bad("names more than one path: hierarchical partition keys are not supported")
	}
	if p[0] != '/' {
		return bad(`must start with "/", as in "/tenant"`)
	}
	if len(p) > 256 {
		return bad("is longer than 256 characters")
	}
	segs := strings.Split(p[1:], "/")
	for _, s := range segs {
		switch {
		case s == "":
			return bad("has an empty segment")
		case strings.ContainsAny(s, `*?[]"\'`):
			return bad(fmt.Sprintf("has segment %q: a key path names one property per segment, without wildcards, brackets or quotes", s))
		case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) >= 0:
			return bad("holds a control character")
		}
	}
	if isSystemProperty([]byte(segs[0])) {
		return bad(fmt.Sprintf("starts at system property %q, which documents do not store", segs[0]))
	}
	return keyPath(segs), nil
}

// String is the path as ContainerProperties.PartitionKeyPath spells it.
func (kp keyPath) String() string { return "/" + strings.Join(kp, "/") }

// documentKey is the partition key of a validated document whose
// top-level member kp[0] has value v (nil: absent): the value at the rest
// of kp inside v, or None when the path has no value (a member missing, or
// a segment through a value that is not an object).
func documentKey(v []byte, kp keyPath) (pkey.Key, error) {
	for _, seg := range kp[1:] {
		if v == nil {
			break
		}
		v = memberValue(v, seg)
	}
	if v == nil {
		return pkey.Key{}, nil
	}
	return pkey.FromJSON(v)
}

// memberValue returns the value of member name of the valid JSON value v,
// or nil when v is not an object or has no such member. Of duplicated
// names the last one counts, as in encoding/json.
func memberValue(v []byte, name string) []byte {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var found []byte
	i := docfmt.SkipWS(v, 1)
	for i < len(v) && v[i] == '"' {
		ke, escaped, err := scanString(v, i)
		if err != nil {
			return found // not expected: v is valid
		}
		key := v[i+1 : ke-1]
		if escaped {
			if key, err = unescapeString(v, i, ke); err != nil {
				return found
			}
		}
		i = docfmt.SkipWS(v, ke)
		if i >= len(v) || v[i] != ':' {
			return found
		}
		vs := docfmt.SkipWS(v, i+1)
		ve, err := scanValue(v, vs, 0)
		if err != nil {
			return found
		}
		if string(key) == name {
			found = v[vs:ve]
		}
		i = docfmt.SkipWS(v, ve)
		if i < len(v) && v[i] == ',' {
			i = docfmt.SkipWS(v, i+1)
		}
	}
	return found
}

// mustKeyPath is the parsed key path of properties already validated.
func mustKeyPath(p ContainerProperties) keyPath {
	kp, err := parseKeyPath(p.ID, p.PartitionKeyPath)
	if err != nil {
		panic("ebb: unvalidated partition key path: " + err.Error()) // validate and recovery check it first
	}
	return kp
}

// splitItemKey is the id and partition key of item key s: s itself and
// None for a plain id. A composite that does not decode (which a record
// that passed its checksum never holds: Open checks every item key) is
// returned whole, with None.
func splitItemKey(s string) (string, PartitionKey) {
	if !pkey.IsComposite(s) {
		return s, PartitionKey{}
	}
	k, id, err := pkey.Split(s)
	if err != nil {
		return s, PartitionKey{}
	}
	return id, PartitionKey{k}
}

// showItem names item key s in messages: `"a"`, or `"a" (partition key
// ["x"])`.
func showItem(s string) string {
	id, k := splitItemKey(s)
	if !pkey.IsComposite(s) {
		return strconv.Quote(id)
	}
	return fmt.Sprintf("%q (partition key %s)", id, k)
}

// checkItemKey reports, as ErrCorrupt, an item key read from disk that
// does not fit container c: a composite in a container without a key path
// or one that does not decode, or a plain id in a container with one.
func (c *Container) checkItemKey(s string) error {
	if c.kp == nil {
		if pkey.IsComposite(s) {
			return fmt.Errorf("ebb: container %q has no partition key, but holds item key %s: %w", c.id, docfmt.QuoteShort(s), ErrCorrupt)
		}
		return nil
	}
	if _, _, err := pkey.Split(s); err != nil {
		return fmt.Errorf("ebb: container %q: %v: %w", c.id, err, ErrCorrupt)
	}
	return nil
}

// needKey is the error of a call that must name the partition key on a
// container with a key path.
func (c *Container) needKey(call string) error {
	return fmt.Errorf("%w: container %q has partition key path %q: %s must name the key: use Container.Partition(key).%s",
		ErrInvalidPartitionKey, c.id, c.kp.String(), call, call)
}
