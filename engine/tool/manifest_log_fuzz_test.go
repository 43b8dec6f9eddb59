package tool

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/vmihailenco/msgpack/v5"
)

// FuzzManifestEditLog feeds the edit-log decoder a snapshot followed by
// edits: a sound edit from the seeds, then data framed as an edit (so its
// msgpack decoding is reached), then the file cut at cut bytes from its
// end. It must never panic; an error must wrap ErrCorrupt. A file cut
// inside its last edit must decode exactly as the file without that edit
// (a torn tail is cut, never an error), and whatever decodes must survive
// a rewrite as one snapshot unchanged.
func FuzzManifestEditLog(f *testing.F) {
	for _, e := range manifestEditSeeds() {
		body, _ := msgpack.Marshal(e)
		f.Add(body, uint16(0))
		f.Add(body, uint16(3))
	}
	f.Add([]byte{0x80}, uint16(0))
	f.Add([]byte{}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		snap, err := dbfile.EncodeManifest(manifestSeeds()[1])
		if err != nil {
			t.Fatal(err)
		}
		first, _ := dbfile.AppendEdit(nil, manifestEditSeeds()[0])
		file := append(append([]byte{}, snap...), first...)
		whole := len(file)
		file = dbfile.AppendFrame(file, data)
		torn := int(cut) > 0 && int(cut) <= len(file)-whole
		if torn {
			file = file[:len(file)-int(cut)]
		}
		m, sound, err := dbfile.DecodeManifest(file, "MANIFEST")
		if err != nil {
			if !errors.Is(err, engine.ErrCorrupt) {
				t.Fatalf("error %q does not wrap ErrCorrupt", err)
			}
			if torn {
				t.Fatalf("a file cut inside its last edit is refused: %v", err)
			}
			return
		}
		if sound > len(file) || sound < whole || torn && sound != whole {
			t.Fatalf("sound prefix %d of %d bytes, the sound edits end at %d", sound, len(file), whole)
		}
		if sound < len(file) {
			// The tail was torn: the result is the file without it.
			m2, sound2, err := dbfile.DecodeManifest(file[:sound], "MANIFEST")
			if err != nil || sound2 != sound || !reflect.DeepEqual(m, m2) {
				t.Fatalf("decoding the sound prefix gives %+v, %d, %v; the whole file %+v", m2, sound2, err, m)
			}
		}
		b, err := dbfile.EncodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest %+v does not encode: %v", m, err)
		}
		m3, _, err := dbfile.DecodeManifest(b, "MANIFEST")
		if err != nil || !reflect.DeepEqual(m, m3) {
			t.Fatalf("rewritten as a snapshot: %+v, %v; want %+v", m3, err, m)
		}
	})
}

// manifestEditSeeds are edits of the shapes the engine appends.
func manifestEditSeeds() []*dbfile.ManifestEdit {
	return []*dbfile.ManifestEdit{
		{NextFile: 9, NextContainer: 4, JournalFrom: 120, Clock: 1_700_000_600,
			Put: []dbfile.ContainerMeta{{Num: 3, ID: "e", History: []dbfile.HistoryEntry{{At: 1_700_000_600}}}}},
		{NextFile: 9, NextContainer: 4, JournalFrom: 120, Clock: 1_700_000_700, Del: []uint32{1}},
		{NextFile: 10, NextContainer: 4, JournalFrom: 130, Clock: 1_700_000_800,
			Put: []dbfile.ContainerMeta{{Num: 2, ID: "d", History: []dbfile.HistoryEntry{{At: 1_700_000_800, DefaultTTL: engine.TTL(5)}}, Files: []uint32{9}}}},
	}
}
