package tool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
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
		b, err := dbfile.EncodeManifest(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		body, _ := msgpack.Marshal(m)
		f.Add(body, true)
		// The same snapshot followed by edits, and by a torn one.
		for _, e := range manifestEditSeeds() {
			b, _ = dbfile.AppendEdit(b, e)
		}
		f.Add(b, false)
		f.Add(b[:len(b)-5], false)
	}
	f.Add([]byte(dbfile.ManifestMagic), false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = wrapManifestBody(data, dbfile.ManifestVersion)
		}
		m, _, err := dbfile.DecodeManifest(data, "MANIFEST")
		if err != nil {
			if !errors.Is(err, engine.ErrCorrupt) {
				t.Fatalf("error %q does not wrap ErrCorrupt", err)
			}
			if m != nil {
				t.Fatalf("returned a manifest with error %v", err)
			}
			return
		}
		b, err := dbfile.EncodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest %+v does not encode: %v", m, err)
		}
		m2, _, err := dbfile.DecodeManifest(b, "MANIFEST")
		if err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
		if m2.Version != m.NeededVersion() {
			t.Fatalf("re-encoded as version %d, want %d (keyed containers: version 2)", m2.Version, m.NeededVersion())
		}
		m2.Version = m.Version // the version follows the content, not the input's header
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, m2)
		}
		v := &verifier{s: &snapshot{man: m}, rep: &VerifyReport{}}
		v.manifest()
	})
}

// wrapManifestBody puts body behind a valid manifest header of version v.
func wrapManifestBody(body []byte, v uint32) []byte {
	var buf bytes.Buffer
	buf.WriteString(dbfile.ManifestMagic)
	binary.Write(&buf, binary.LittleEndian, v)
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(body, dbfile.Castagnoli))
	binary.Write(&buf, binary.LittleEndian, uint32(len(body)))
	buf.Write(body)
	return buf.Bytes()
}

// manifestSeeds are manifests of the shapes a database writes.
func manifestSeeds() []*dbfile.Manifest {
	return []*dbfile.Manifest{
		{NextFile: 1, NextContainer: 1, JournalFrom: 1, Version: dbfile.ManifestVersionPlain},
		{
			NextFile: 9, NextContainer: 3, JournalFrom: 120, Clock: 1_700_000_500, Version: dbfile.ManifestVersionPlain,
			Containers: []dbfile.ContainerMeta{
				{Num: 1, ID: "c", History: []dbfile.HistoryEntry{{At: 1_700_000_000, DefaultTTL: engine.TTL(3600)}}, Files: []uint32{2, 5, 8},
					Hides: map[uint32][]uint32{8: {2, 5}}},
				{Num: 2, ID: "d", Indexing: dbfile.IndexingLazy, History: []dbfile.HistoryEntry{
					{At: 1_700_000_000}, {At: 1_700_000_100, DefaultTTL: engine.TTL(-1)}, {At: 1_700_000_200, DefaultTTL: engine.TTL(60)},
				}},
			},
		},
		{
			NextFile: 3, NextContainer: 2, JournalFrom: 7, Clock: 1_700_000_000, Version: dbfile.ManifestVersion,
			Containers: []dbfile.ContainerMeta{
				{Num: 1, ID: "keyed", PartitionKey: "/tenant", History: []dbfile.HistoryEntry{{At: 1_700_000_000}}, Files: []uint32{2}},
			},
		},
	}
}

// TestManifestRoundTrip checks the seeds survive encoding, and that a
// wrapped body is read as the file would be.
func TestManifestRoundTrip(t *testing.T) {
	for _, m := range manifestSeeds() {
		b, err := dbfile.EncodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := dbfile.DecodeManifest(b, "MANIFEST")
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
		body, _ := msgpack.Marshal(m)
		if !bytes.Equal(wrapManifestBody(body, m.Version), b) {
			t.Fatalf("wrapManifestBody differs from encodeManifest")
		}
	}
}
