package dbfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/ebbdb/ebb/segment"
)

// wrapManifestBody puts body behind a valid MANIFEST header.
func wrapManifestBody(body []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString(ManifestMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(ManifestVersion))
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(body, Castagnoli))
	binary.Write(&buf, binary.LittleEndian, uint32(len(body)))
	buf.Write(body)
	return buf.Bytes()
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
	m, _, err := DecodeManifest(wrapManifestBody(body), "MANIFEST")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Errorf("DecodeManifest = %+v, %v; want ErrCorrupt", m, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("DecodeManifest allocated %d bytes for a %d-byte body that claims 4M elements", n, len(body))
	}
}

// TestManifestVersions: a snapshot is written as version 1 unless a
// container has a partition key path (version 2); both are read, with the
// version reported, and versions outside 1..2 are refused as corrupt,
// naming the version.
func TestManifestVersions(t *testing.T) {
	plain := &Manifest{NextFile: 1, NextContainer: 2, JournalFrom: 1,
		Containers: []ContainerMeta{{Num: 1, ID: "c"}}}
	keyed := &Manifest{NextFile: 1, NextContainer: 2, JournalFrom: 1,
		Containers: []ContainerMeta{{Num: 1, ID: "c", PartitionKey: "/pk"}}}
	for _, tc := range []struct {
		m    *Manifest
		want uint32
	}{{plain, ManifestVersionPlain}, {keyed, ManifestVersion}} {
		b, err := EncodeManifest(tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint32(b[8:]); v != tc.want {
			t.Errorf("%+v encoded as version %d, want %d", tc.m.Containers, v, tc.want)
		}
		got, _, err := DecodeManifest(b, "MANIFEST")
		if err != nil || got.Version != tc.want {
			t.Errorf("decoded %+v, %v; want version %d", got, err, tc.want)
		}
	}
	b, _ := EncodeManifest(plain)
	for _, v := range []uint32{0, ManifestVersion + 1} {
		binary.LittleEndian.PutUint32(b[8:], v)
		_, _, err := DecodeManifest(b, "MANIFEST")
		if !errors.Is(err, segment.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), fmt.Appendf(nil, "version %d", v)) {
			t.Errorf("version %d: err %v, want ErrCorrupt naming the version", v, err)
		}
	}
}
