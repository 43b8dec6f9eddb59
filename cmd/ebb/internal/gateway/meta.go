package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dbMeta is the sidecar of one Cosmos database: what the engine does not
// keep. It lives in metaFile beside the engine's directory and is written
// atomically (a temporary file, fsync, rename, fsync of the folder).
type dbMeta struct {
	ID   string `json:"id"`
	RID  uint32 `json:"rid"`
	TS   int64  `json:"ts"`
	Seq  uint64 `json:"seq"` // the last etag sequence handed out in this database
	ETag string `json:"etag"`
	// NextColl numbers the containers' rids.
	NextColl uint32 `json:"nextColl"`
	// Throughput and Autoscale are the database's shared throughput, as
	// for a container.
	Throughput int64                `json:"throughput,omitempty"`
	Autoscale  bool                 `json:"autoscale,omitempty"`
	Containers map[string]*collMeta `json:"containers"`
}

// collMeta is what the sidecar keeps of one container.
type collMeta struct {
	RID  uint32 `json:"rid"`
	TS   int64  `json:"ts"`
	ETag string `json:"etag"`
	// Props are the members of the properties as the client gave them
	// (vector, full-text, unique-key policies...), returned as given; the
	// members the gateway owns (id, defaultTtl, indexingPolicy,
	// partitionKey and the system properties) are set over them.
	Props map[string]json.RawMessage `json:"props,omitempty"`
	// PartitionKey is the partitionKey definition as it is answered.
	PartitionKey json.RawMessage `json:"partitionKey,omitempty"`
	// IndexingPolicy is the indexingPolicy as given, answered as given.
	IndexingPolicy json.RawMessage `json:"indexingPolicy,omitempty"`
	// Throughput is the manual throughput or autoscale maximum the client
	// asked for (accepted and ignored), 0 when none.
	Throughput int64 `json:"throughput,omitempty"`
	Autoscale  bool  `json:"autoscale,omitempty"`
}

const (
	metaFile = "meta.json"
	dataDir  = "data"
)

// dirName is a filesystem-safe, fixed-length name for a database id: up to
// 32 safe characters of the id for people reading the folder, then a hash
// of the whole id. The id itself is in the sidecar.
func dirName(id string) string {
	var b strings.Builder
	b.WriteString("db-")
	for _, r := range id {
		if b.Len() >= 35 {
			break
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteRune(r)
		} else if r >= 'A' && r <= 'Z' {
			b.WriteRune(r + 'a' - 'A')
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(sum[:8]))
	return b.String()
}

// writeMeta writes m to dir/meta.json atomically.
func writeMeta(dir string, m *dbMeta) error {
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return fmt.Errorf("encode the sidecar of database %q: %w", m.ID, err)
	}
	return writeFileAtomic(filepath.Join(dir, metaFile), data)
}

// writeFileAtomic replaces path with data: a temporary file beside it,
// fsynced, renamed over it, and the folder fsynced, so a crash leaves the
// old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// readMeta reads dir/meta.json.
func readMeta(dir string) (*dbMeta, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, err
	}
	var m dbMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, metaFile), err)
	}
	if m.ID == "" {
		return nil, fmt.Errorf("read %s: no database id", filepath.Join(dir, metaFile))
	}
	if m.Containers == nil {
		m.Containers = map[string]*collMeta{}
	}
	return &m, nil
}

// Resource ids, as Cosmos DB shapes them: base64 of 4 bytes for a database,
// 8 for a container (the database's 4 and its own 4), 16 for an item (the
// container's 8 and 8 of its own), with '/' written as '-'.

func ridString(b []byte) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
}

func dbRID(db uint32) string {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], db)
	return ridString(b[:])
}

func collRID(db, coll uint32) string {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], db)
	binary.BigEndian.PutUint32(b[4:], coll)
	return ridString(b[:])
}

// docRID is an item's _rid: the container's and a hash of its partition key
// and id, so it is the same on every read without being stored.
func docRID(db, coll uint32, pk, id string) string {
	var b [16]byte
	binary.LittleEndian.PutUint32(b[:4], db)
	binary.BigEndian.PutUint32(b[4:8], coll)
	h := sha256.Sum256([]byte(pk + "\x00" + id))
	copy(b[8:], h[:8])
	return ridString(b[:])
}

// etagOf renders an etag of a database or container from a sequence, in
// the quoted form Cosmos DB uses.
func etagOf(seq uint64) string {
	return fmt.Sprintf("\"%08x-0000-0000-0000-%012x\"", uint32(seq>>48), seq&0xffffffffffff)
}
