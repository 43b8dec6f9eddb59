package dbfile

import (
	"bytes"
	"encoding/binary"
	"errors"
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
