package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzDecodeManifest feeds decodeManifest arbitrary bytes, either as a
// whole file (snapshot and edit log) or (wrap) as the msgpack body behind a
// valid header and checksum, so that the msgpack decoding is reached too. It must never
// panic; an error must wrap ErrCorrupt; a manifest it accepts must survive
// encodeManifest and decodeManifest unchanged, and Verify's checks of what
// it says must run without a panic.
func FuzzDecodeManifest(f *testing.F) {
	for _, m := range manifestSeeds() {
		b, err := encodeManifest(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		body, _ := msgpack.Marshal(m)
		f.Add(body, true)
		// The same snapshot followed by edits, and by a torn one.
		for _, e := range manifestEditSeeds() {
			b, _ = appendEdit(b, e)
		}
		f.Add(b, false)
		f.Add(b[:len(b)-5], false)
	}
	f.Add([]byte(manifestMagic), false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = wrapManifestBody(data)
		}
		m, err := decodeManifest(data, "MANIFEST")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %q does not wrap ErrCorrupt", err)
			}
			if m != nil {
				t.Fatalf("returned a manifest with error %v", err)
			}
			return
		}
		b, err := encodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest %+v does not encode: %v", m, err)
		}
		m2, err := decodeManifest(b, "MANIFEST")
		if err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, m2)
		}
		v := &verifier{s: &snapshot{man: m}, rep: &VerifyReport{}}
		v.manifest()
	})
}

// wrapManifestBody puts body behind a valid manifest header.
func wrapManifestBody(body []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString(manifestMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(manifestVersion))
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(body, castagnoli))
	binary.Write(&buf, binary.LittleEndian, uint32(len(body)))
	buf.Write(body)
	return buf.Bytes()
}

// manifestSeeds are manifests of the shapes a database writes.
func manifestSeeds() []*manifest {
	return []*manifest{
		{NextFile: 1, NextContainer: 1, JournalFrom: 1},
		{
			NextFile: 9, NextContainer: 3, JournalFrom: 120, Clock: 1_700_000_500,
			Containers: []containerMeta{
				{Num: 1, ID: "c", History: []historyEntry{{At: 1_700_000_000, DefaultTTL: TTL(3600)}}, Files: []uint32{2, 5, 8},
					Hides: map[uint32][]uint32{8: {2, 5}}},
				{Num: 2, ID: "d", Indexing: IndexingLazy, History: []historyEntry{
					{At: 1_700_000_000}, {At: 1_700_000_100, DefaultTTL: TTL(-1)}, {At: 1_700_000_200, DefaultTTL: TTL(60)},
				}},
			},
		},
	}
}

// TestManifestRoundTrip checks the seeds survive encoding, and that a
// wrapped body is read as the file would be.
func TestManifestRoundTrip(t *testing.T) {
	for _, m := range manifestSeeds() {
		b, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeManifest(b, "MANIFEST")
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
		body, _ := msgpack.Marshal(m)
		if !bytes.Equal(wrapManifestBody(body), b) {
			t.Fatalf("wrapManifestBody differs from encodeManifest")
		}
	}
}

// TestDecodeManifestClaimedLength: a MANIFEST whose checksum holds but
// whose body claims an array of 4M segment files in a few bytes must be
// refused as corrupt without allocating what it claims. msgpack v5.4.0 and
// v5.4.1 preallocate any claimed slice length (their alloc limit is never
// applied: vmihailenco/msgpack#401), so a claim of 2^31 containers in 17
// bytes kills the process with a fatal out-of-memory error, which no
// recover catches. The claim here is small enough to survive.
func TestDecodeManifestClaimedLength(t *testing.T) {
	body := []byte{0x81, 0xaa}
	body = append(body, "containers"...)
	body = append(body, 0x91, 0x81, 0xa5)
	body = append(body, "files"...)
	body = append(body, 0xdd, 0x00, 0x40, 0x00, 0x00) // array32 of 1<<22 uint32s, none present
	if err := msgpackLengthsFit(body); err == nil {
		t.Fatal("msgpackLengthsFit accepts the body")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := decodeManifest(wrapManifestBody(body), "MANIFEST")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeManifest = %+v, %v; want ErrCorrupt", m, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("decodeManifest allocated %d bytes for a %d-byte body that claims 4M elements", n, len(body))
	}
}
