package segment

import (
	"bytes"
	"errors"
	"testing"
)

var compressions = []Compression{CompressionNone, CompressionZstd, CompressionS2}

func TestBlockRoundTrip(t *testing.T) {
	recs := AppendRecord(nil, &benchRecord)
	for range 200 {
		recs = AppendRecord(recs, &benchRecord)
	}
	for _, c := range compressions {
		for _, raw := range [][]byte{nil, {}, []byte("x"), recs, bytes.Repeat([]byte{0}, 1<<20)} {
			b := appendBlock([]byte("junk"), raw, c, kindData)
			b = b[4:]
			got, n, err := decodeBlock(append(b, "after"...), kindData, MaxBlockSize, nil)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", c, len(raw), err)
			}
			if n != len(b) || !bytes.Equal(got, raw) {
				t.Fatalf("%s, %d bytes: round trip gave %d bytes, n=%d of %d", c, len(raw), len(got), n, len(b))
			}
			if c != CompressionNone && len(raw) > 1000 && Compression(b[8]) != c {
				t.Errorf("%s: compressible block stored as %s", c, Compression(b[8]))
			}
			if _, _, err := decodeBlock(b, kindIndex, MaxBlockSize, nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: wrong kind accepted: %v", c, err)
			}
			if len(raw) > 1 {
				if _, _, err := decodeBlock(b, kindData, len(raw)-1, nil); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: length limit not enforced: %v", c, err)
				}
			}
			for i := range b {
				d := bytes.Clone(b)
				d[i] ^= 0x01
				if _, _, err := decodeBlock(d, kindData, MaxBlockSize, nil); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: flipped byte %d: err = %v", c, i, err)
				}
				if len(b) > 2000 && i > 64 {
					break // long blocks: the header and the start are enough
				}
			}
			for i := range len(b) {
				if i > 100 && len(b)-i > 100 && i%1009 != 0 {
					continue // long blocks: the edges and a sample
				}
				if _, _, err := decodeBlock(b[:i], kindData, MaxBlockSize, nil); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: truncated to %d: err = %v", c, i, err)
				}
			}
		}
	}
}

func FuzzBlock(f *testing.F) {
	var recs []byte
	for i := range 12 {
		r := benchRecord
		r.Seq += uint64(i)
		recs = AppendRecord(recs, &r)
	}
	for _, c := range compressions {
		f.Add(appendBlock(nil, recs, c, kindData), uint8(kindData))
		f.Add(appendBlock(nil, recs, c, kindIndex), uint8(kindIndex))
	}
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, kind uint8) {
		// Arbitrary bytes as a framed block: an error wrapping ErrCorrupt,
		// or contents within the limit.
		const limit = 1 << 20
		raw, n, err := decodeBlock(b, blockKind(kind), limit, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
		} else if n > len(b) || len(raw) > limit {
			t.Fatalf("n=%d of %d, %d raw bytes", n, len(b), len(raw))
		}
		// Arbitrary bytes as a block's contents: every codec round-trips.
		for _, c := range compressions {
			enc := appendBlock(nil, b, c, kindData)
			got, m, err := decodeBlock(enc, kindData, MaxBlockSize, nil)
			if err != nil || m != len(enc) || !bytes.Equal(got, b) {
				t.Fatalf("%s: round trip failed: %v", c, err)
			}
		}
	})
}
