package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// Op is the kind of mutation a Record describes.
type Op uint8

const (
	// OpPut writes a whole item: the record carries its body.
	OpPut Op = 1
	// OpDelete removes an item: the record carries no body.
	OpDelete Op = 2
)

// String returns "put", "delete", or "op(N)" for an unknown value.
func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

func (o Op) valid() bool { return o == OpPut || o == OpDelete }

// Record is one mutation of one item: the unit that the journal appends and
// that segment blocks hold. Its encoding is a msgpack array of 7 elements:
//
//	[op, container, seq, ts, ttl, id, body]
//
// with integers in their shortest msgpack form, id a msgpack str, and body a
// msgpack bin (or nil for a nil Body, as for OpDelete). This is byte for byte
// what msgpack.Marshal(&rec) produces through EncodeMsgpack.
type Record struct {
	Op        Op
	Container uint32 // container number (engine-assigned)
	Seq       uint64 // commit sequence; orders versions of one id; also the item's etag
	TS        int64  // _ts, unix seconds of the write
	TTL       int32  // the item's own ttl property: 0 = absent, -1 = never, n = seconds
	ID        string
	Body      []byte // stored JSON object (system properties stripped); nil for OpDelete
}

// recordFields is the length of a record's msgpack array.
const recordFields = 7

// The msgpack type codes used by records. They are the values of the
// variables in github.com/vmihailenco/msgpack/v5/msgpcode (a test checks
// that they agree), declared as constants so the encoder and decoder compile
// to jump tables and immediate compares.
const (
	mpPosFixIntMax = 0x7f
	mpNegFixIntMin = 0xe0
	mpFixArray     = 0x90
	mpFixStr       = 0xa0
	mpFixStrMax    = 0xbf
	mpNil          = 0xc0
	mpBin8         = 0xc4
	mpBin16        = 0xc5
	mpBin32        = 0xc6
	mpUint8        = 0xcc
	mpUint16       = 0xcd
	mpUint32       = 0xce
	mpUint64       = 0xcf
	mpInt8         = 0xd0
	mpInt16        = 0xd1
	mpInt32        = 0xd2
	mpInt64        = 0xd3
	mpStr8         = 0xd9
	mpStr16        = 0xda
	mpStr32        = 0xdb
)

// AppendRecord appends r's msgpack encoding to dst and returns the extended
// slice. It does not allocate when dst has room for RecordSize(r) more bytes.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, mpFixArray|recordFields)
	dst = appendUint(dst, uint64(r.Op))
	dst = appendUint(dst, uint64(r.Container))
	dst = appendUint(dst, r.Seq)
	dst = appendInt(dst, r.TS)
	dst = appendInt(dst, int64(r.TTL))
	n := len(r.ID)
	switch {
	case n < 32:
		dst = append(dst, mpFixStr|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, mpStr8, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, mpStr16), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, mpStr32), uint32(n))
	}
	dst = append(dst, r.ID...)
	if r.Body == nil {
		return append(dst, mpNil)
	}
	n = len(r.Body)
	switch {
	case n <= math.MaxUint8:
		dst = append(dst, mpBin8, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, mpBin16), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, mpBin32), uint32(n))
	}
	return append(dst, r.Body...)
}

// RecordSize returns len(AppendRecord(nil, r)) without encoding.
func RecordSize(r *Record) int {
	n := 1 + uintSize(uint64(r.Op)) + uintSize(uint64(r.Container)) + uintSize(r.Seq) +
		intSize(r.TS) + intSize(int64(r.TTL))
	switch l := len(r.ID); {
	case l < 32:
		n += 1 + l
	case l <= math.MaxUint8:
		n += 2 + l
	case l <= math.MaxUint16:
		n += 3 + l
	default:
		n += 5 + l
	}
	switch l := len(r.Body); {
	case r.Body == nil:
		n++
	case l <= math.MaxUint8:
		n += 2 + l
	case l <= math.MaxUint16:
		n += 3 + l
	default:
		n += 5 + l
	}
	return n
}

// DecodeRecord decodes one record from the front of b into r and returns the
// number of bytes it used.
//
// r.Body aliases b (its capacity is clipped, so appending to it copies):
// it is valid only as long as b is. r.ID is a copy, except that when r.ID
// already holds the same id it is kept as it is, so decoding into a reused
// Record allocates nothing for repeated ids.
//
// Damaged or truncated input returns an error wrapping ErrCorrupt; it never
// panics and never allocates more than the id's length, which is bounded by
// len(b). On error r is left partly written.
func DecodeRecord(b []byte, r *Record) (int, error) {
	n, err := decodeRecord(b, r)
	if err != nil {
		return 0, fmt.Errorf("segment: %w", err)
	}
	return n, nil
}

// decodeRecord is DecodeRecord with errors that lack the package prefix,
// for the Reader, which adds its own.
func decodeRecord(b []byte, r *Record) (int, error) {
	if len(b) == 0 {
		return 0, corruptf("record: empty input")
	}
	if b[0] != mpFixArray|recordFields {
		return 0, corruptf("record: header byte %#x is not a %d-element array", b[0], recordFields)
	}
	i := 1
	var (
		u   uint64
		s   int64
		err error
	)
	if u, i, err = readUint(b, i, "op"); err != nil {
		return 0, err
	}
	if op := Op(u); u > math.MaxUint8 || !op.valid() {
		return 0, corruptf("record: invalid op %d", u)
	}
	r.Op = Op(u)
	if u, i, err = readUint(b, i, "container"); err != nil {
		return 0, err
	}
	if u > math.MaxUint32 {
		return 0, corruptf("record: container %d out of range", u)
	}
	r.Container = uint32(u)
	if r.Seq, i, err = readUint(b, i, "seq"); err != nil {
		return 0, err
	}
	if r.TS, i, err = readInt(b, i, "ts"); err != nil {
		return 0, err
	}
	if s, i, err = readInt(b, i, "ttl"); err != nil {
		return 0, err
	}
	if s < math.MinInt32 || s > math.MaxInt32 {
		return 0, corruptf("record: ttl %d out of range", s)
	}
	r.TTL = int32(s)

	// id: a msgpack str.
	if i >= len(b) {
		return 0, corruptf("record: truncated before id")
	}
	var n, start int
	switch c := b[i]; {
	case c >= mpFixStr && c <= mpFixStrMax:
		n, start = int(c&0x1f), i+1
	case c == mpStr8 || c == mpStr16 || c == mpStr32:
		if n, start, err = readLen(b, i, "id"); err != nil {
			return 0, err
		}
	default:
		return 0, corruptf("record: id has type code %#x, want str", c)
	}
	if n > len(b)-start {
		return 0, corruptf("record: id length %d exceeds the %d bytes left", n, len(b)-start)
	}
	if id := b[start : start+n]; r.ID != string(id) {
		r.ID = string(id)
	}
	i = start + n

	// body: a msgpack bin, or nil.
	if i >= len(b) {
		return 0, corruptf("record: truncated before body")
	}
	switch c := b[i]; c {
	case mpNil:
		r.Body = nil
		return i + 1, nil
	case mpBin8, mpBin16, mpBin32:
		if n, start, err = readLen(b, i, "body"); err != nil {
			return 0, err
		}
	default:
		return 0, corruptf("record: body has type code %#x, want bin or nil", c)
	}
	if n > len(b)-start {
		return 0, corruptf("record: body length %d exceeds the %d bytes left", n, len(b)-start)
	}
	end := start + n
	r.Body = b[start:end:end]
	return end, nil
}

// EncodeMsgpack implements msgpack.CustomEncoder, so that msgpack.Marshal of
// a *Record (or a struct holding one) produces the same bytes as AppendRecord.
// AppendRecord is the fast path; this exists for interoperability.
func (r *Record) EncodeMsgpack(enc *msgpack.Encoder) error {
	var buf [64]byte
	_, err := enc.Writer().Write(AppendRecord(buf[:0], r))
	return err
}

// DecodeMsgpack implements msgpack.CustomDecoder for the encoding that
// AppendRecord writes. Body is a fresh copy owned by r.
func (r *Record) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != recordFields {
		return corruptf("segment: record: array of %d elements, want %d", n, recordFields)
	}
	op, err := dec.DecodeUint8()
	if err != nil {
		return err
	}
	if !Op(op).valid() {
		return corruptf("segment: record: invalid op %d", op)
	}
	r.Op = Op(op)
	if r.Container, err = dec.DecodeUint32(); err != nil {
		return err
	}
	if r.Seq, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if r.TS, err = dec.DecodeInt64(); err != nil {
		return err
	}
	if r.TTL, err = dec.DecodeInt32(); err != nil {
		return err
	}
	if r.ID, err = dec.DecodeString(); err != nil {
		return err
	}
	r.Body, err = dec.DecodeBytes()
	return err
}

// corruptf returns an error wrapping ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrCorrupt)...)
}

// errTruncated is the detail for reads running off the end of a record.
var errTruncated = errors.New("truncated")

func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= mpPosFixIntMax:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpUint16), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, mpUint32), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, mpUint64), v)
}

func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, mpInt8, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, mpInt16), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, mpInt32), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, mpInt64), uint64(v))
}

func uintSize(v uint64) int {
	switch {
	case v <= mpPosFixIntMax:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	}
	return 9
}

func intSize(v int64) int {
	switch {
	case v >= 0:
		return uintSize(uint64(v))
	case v >= -32:
		return 1
	case v >= math.MinInt8:
		return 2
	case v >= math.MinInt16:
		return 3
	case v >= math.MinInt32:
		return 5
	}
	return 9
}

// readNum reads any msgpack integer at b[i]. It returns the value as raw
// 64 bits, whether it is signed (a negative value), and the next position.
func readNum(b []byte, i int, field string) (v uint64, neg bool, next int, err error) {
	if i >= len(b) {
		return 0, false, 0, corruptf("record: %s: %w", field, errTruncated)
	}
	c := b[i]
	var width int
	switch {
	case c <= mpPosFixIntMax:
		return uint64(c), false, i + 1, nil
	case c >= mpNegFixIntMin:
		return uint64(int64(int8(c))), true, i + 1, nil
	case c == mpUint8 || c == mpInt8:
		width = 1
	case c == mpUint16 || c == mpInt16:
		width = 2
	case c == mpUint32 || c == mpInt32:
		width = 4
	case c == mpUint64 || c == mpInt64:
		width = 8
	default:
		return 0, false, 0, corruptf("record: %s has type code %#x, want an integer", field, c)
	}
	if width > len(b)-i-1 {
		return 0, false, 0, corruptf("record: %s: %w", field, errTruncated)
	}
	p := b[i+1 : i+1+width]
	signed := c >= mpInt8
	switch width {
	case 1:
		v = uint64(p[0])
		if signed {
			v = uint64(int64(int8(p[0])))
		}
	case 2:
		v = uint64(binary.BigEndian.Uint16(p))
		if signed {
			v = uint64(int64(int16(v)))
		}
	case 4:
		v = uint64(binary.BigEndian.Uint32(p))
		if signed {
			v = uint64(int64(int32(v)))
		}
	case 8:
		v = binary.BigEndian.Uint64(p)
	}
	return v, signed && int64(v) < 0, i + 1 + width, nil
}

// readUint reads a non-negative msgpack integer at b[i].
func readUint(b []byte, i int, field string) (uint64, int, error) {
	v, neg, next, err := readNum(b, i, field)
	if err != nil {
		return 0, 0, err
	}
	if neg {
		return 0, 0, corruptf("record: %s is negative (%d)", field, int64(v))
	}
	return v, next, nil
}

// readInt reads a msgpack integer at b[i] that fits an int64.
func readInt(b []byte, i int, field string) (int64, int, error) {
	v, neg, next, err := readNum(b, i, field)
	if err != nil {
		return 0, 0, err
	}
	if !neg && v > math.MaxInt64 {
		return 0, 0, corruptf("record: %s %d overflows int64", field, v)
	}
	return int64(v), next, nil
}

// readLen reads the length of a str8/16/32 or bin8/16/32 whose type code is
// at b[i]; it returns the length and where the payload starts.
func readLen(b []byte, i int, field string) (n, start int, err error) {
	var width int
	switch b[i] {
	case mpStr8, mpBin8:
		width = 1
	case mpStr16, mpBin16:
		width = 2
	default:
		width = 4
	}
	if width > len(b)-i-1 {
		return 0, 0, corruptf("record: %s length: %w", field, errTruncated)
	}
	p := b[i+1 : i+1+width]
	switch width {
	case 1:
		n = int(p[0])
	case 2:
		n = int(binary.BigEndian.Uint16(p))
	default:
		n = int(binary.BigEndian.Uint32(p))
	}
	return n, i + 1 + width, nil
}
