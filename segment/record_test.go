package segment

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

var recordCases = []struct {
	name string
	rec  Record
}{
	{"put", Record{Op: OpPut, Container: 3, Seq: 42, TS: 1700000000, TTL: 60, ID: "a", Body: []byte(`{"user":"x"}`)}},
	{"delete", Record{Op: OpDelete, Container: 3, Seq: 43, TS: 1700000001, ID: "a"}},
	{"empty body", Record{Op: OpPut, ID: "e", Body: []byte{}}},
	{"empty id", Record{Op: OpPut, Body: []byte("{}")}},
	{"ttl never", Record{Op: OpPut, TTL: -1, ID: "n", Body: []byte("{}")}},
	{"max values", Record{Op: OpPut, Container: math.MaxUint32, Seq: math.MaxUint64, TS: math.MaxInt64,
		TTL: math.MaxInt32, ID: strings.Repeat("z", 255), Body: bytes.Repeat([]byte("x"), 1<<16)}},
	{"min values", Record{Op: OpDelete, TS: math.MinInt64, TTL: math.MinInt32, ID: "m"}},
	{"int widths", Record{Op: OpPut, Container: 0x80, Seq: 0x10000, TS: -33, TTL: -129, ID: "w", Body: []byte{0}}},
	{"more widths", Record{Op: OpPut, Container: 0x100, Seq: 0x1_0000_0000, TS: -0x8001, TTL: 0x8000, ID: "v", Body: []byte{1}}},
	{"unicode id", Record{Op: OpPut, Seq: 7, ID: "日本語-ключ-🔑", Body: []byte(`{"k":"ü"}`)}},
	{"id of 31", Record{Op: OpPut, ID: strings.Repeat("i", 31), Body: bytes.Repeat([]byte("b"), 255)}},
	{"id of 32", Record{Op: OpPut, ID: strings.Repeat("i", 32), Body: bytes.Repeat([]byte("b"), 256)}},
	{"long id", Record{Op: OpPut, ID: strings.Repeat("L", 70000), Body: bytes.Repeat([]byte("B"), 70000)}},
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendRecord([]byte("prefix"), &tc.rec)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatal("AppendRecord clobbered dst")
			}
			b = b[len("prefix"):]
			if got := RecordSize(&tc.rec); got != len(b) {
				t.Fatalf("RecordSize = %d, encoding is %d bytes", got, len(b))
			}
			var got Record
			n, err := DecodeRecord(append(b, "trailing"...), &got)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b) {
				t.Fatalf("DecodeRecord used %d bytes, want %d", n, len(b))
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Fatalf("got %+v\nwant %+v", got, tc.rec)
			}
			// The library path writes the same bytes and reads them back.
			m, err := msgpack.Marshal(&tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m, b) {
				t.Fatalf("msgpack.Marshal differs:\n%x\n%x", m, b)
			}
			var viaLib Record
			if err := msgpack.Unmarshal(b, &viaLib); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(viaLib, tc.rec) {
				t.Fatalf("msgpack.Unmarshal: got %+v", viaLib)
			}
			// Every truncation is an error wrapping ErrCorrupt.
			for i := range len(b) {
				if i > 300 && len(b)-i > 300 && i%997 != 0 {
					continue // long records: the edges and a sample
				}
				if _, err := DecodeRecord(b[:i], &got); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated to %d: err = %v", i, err)
				}
			}
		})
	}
}

func TestDecodeRecordAliasing(t *testing.T) {
	rec := recordCases[0].rec
	b := AppendRecord(nil, &rec)
	var got Record
	if _, err := DecodeRecord(b, &got); err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] = '!'
	if got.Body[len(got.Body)-1] != '!' {
		t.Error("Body does not alias the input")
	}
	if cap(got.Body) != len(got.Body) {
		t.Error("Body capacity not clipped: appending would overwrite the input")
	}
	// A non-canonical but valid encoding (fixed-width ints, str8 id) decodes.
	wide := []byte{0x97, 0xcc, 1, 0xce, 0, 0, 0, 3, 0xcf, 0, 0, 0, 0, 0, 0, 0, 9, 0xd3, 0, 0, 0, 0, 0, 0, 0, 5,
		0xd2, 0xff, 0xff, 0xff, 0xff, 0xd9, 1, 'k', 0xc4, 1, 'x'}
	if _, err := DecodeRecord(wide, &got); err != nil {
		t.Fatal(err)
	}
	want := Record{Op: OpPut, Container: 3, Seq: 9, TS: 5, TTL: -1, ID: "k", Body: []byte("x")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	good := AppendRecord(nil, &recordCases[0].rec)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"map", []byte{0x87}},
		{"short array", append([]byte{0x96}, good[1:]...)},
		{"op 0", []byte{0x97, 0, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"op 3", []byte{0x97, 3, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"negative op", []byte{0x97, 0xff, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"container too big", []byte{0x97, 1, 0xcf, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"negative seq", []byte{0x97, 1, 0, 0xff, 0, 0, 0xa0, 0xc0}},
		{"ts overflows", []byte{0x97, 1, 0, 0, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"ttl too big", []byte{0x97, 1, 0, 0, 0, 0xce, 0x80, 0, 0, 0, 0xa0, 0xc0}},
		{"id not str", []byte{0x97, 1, 0, 0, 0, 0, 0xc4, 0, 0xc0}},
		{"body not bin", []byte{0x97, 1, 0, 0, 0, 0, 0xa0, 0xa0}},
		{"float seq", []byte{0x97, 1, 0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0xc0}},
		{"huge body length", []byte{0x97, 1, 0, 0, 0, 0, 0xa0, 0xc6, 0xff, 0xff, 0xff, 0xff}},
		{"huge id length", []byte{0x97, 1, 0, 0, 0, 0, 0xdb, 0xff, 0xff, 0xff, 0xff}},
	} {
		var r Record
		if _, err := DecodeRecord(tc.b, &r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", tc.name, err)
		}
	}
	if s := Op(9).String(); s != "op(9)" {
		t.Errorf("Op(9).String() = %q", s)
	}
}

// TestMsgpackCodes checks the package's constants against msgpcode's.
func TestMsgpackCodes(t *testing.T) {
	for _, c := range []struct {
		ours, lib byte
	}{
		{mpPosFixIntMax, msgpcode.PosFixedNumHigh}, {mpNegFixIntMin, msgpcode.NegFixedNumLow},
		{mpFixArray, msgpcode.FixedArrayLow}, {mpFixStr, msgpcode.FixedStrLow}, {mpFixStrMax, msgpcode.FixedStrHigh},
		{mpNil, msgpcode.Nil}, {mpBin8, msgpcode.Bin8}, {mpBin16, msgpcode.Bin16}, {mpBin32, msgpcode.Bin32},
		{mpUint8, msgpcode.Uint8}, {mpUint16, msgpcode.Uint16}, {mpUint32, msgpcode.Uint32}, {mpUint64, msgpcode.Uint64},
		{mpInt8, msgpcode.Int8}, {mpInt16, msgpcode.Int16}, {mpInt32, msgpcode.Int32}, {mpInt64, msgpcode.Int64},
		{mpStr8, msgpcode.Str8}, {mpStr16, msgpcode.Str16}, {mpStr32, msgpcode.Str32},
	} {
		if c.ours != c.lib {
			t.Errorf("code %#x, msgpcode says %#x", c.ours, c.lib)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, tc := range recordCases[:10] {
		f.Add(AppendRecord(nil, &tc.rec))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		n, err := DecodeRecord(b, &r)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("used %d of %d bytes", n, len(b))
		}
		enc := AppendRecord(nil, &r)
		if RecordSize(&r) != len(enc) {
			t.Fatalf("RecordSize %d, encoding %d", RecordSize(&r), len(enc))
		}
		var again Record
		if m, err := DecodeRecord(enc, &again); err != nil || m != len(enc) || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding does not round-trip: %v %+v %+v", err, again, r)
		}
	})
}

var benchRecord = Record{Op: OpPut, Container: 7, Seq: 123456789, TS: 1700000000, TTL: 3600,
	ID: "session-0000012345", Body: []byte(`{"user":"alice","cart":[1,2,3],"total":42.5,"region":"eu-west"}`)}

func BenchmarkAppendRecord(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(RecordSize(&benchRecord)))
	for b.Loop() {
		buf = AppendRecord(buf[:0], &benchRecord)
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	enc := AppendRecord(nil, &benchRecord)
	b.Run("reused", func(b *testing.B) {
		var r Record
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := DecodeRecord(enc, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			var r Record
			if _, err := DecodeRecord(enc, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMsgpackLibrary measures the msgpack.Encoder/Decoder path that
// EncodeMsgpack/DecodeMsgpack provide, for comparison with the direct one.
func BenchmarkMsgpackLibrary(b *testing.B) {
	b.Run("encode", func(b *testing.B) {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(&benchRecord); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		enc := AppendRecord(nil, &benchRecord)
		rd := bytes.NewReader(enc)
		dec := msgpack.NewDecoder(rd)
		var r Record
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(enc)
			dec.ResetReader(rd)
			if err := dec.Decode(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
