package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine"
)

// collBody is the container properties a client sends.
type collBody struct {
	ID             string          `json:"id"`
	DefaultTTL     json.RawMessage `json:"defaultTtl"`
	PartitionKey   json.RawMessage `json:"partitionKey"`
	IndexingPolicy json.RawMessage `json:"indexingPolicy"`
}

type pkDef struct {
	Paths   []string `json:"paths"`
	Kind    string   `json:"kind"`
	Version int      `json:"version"`
}

type indexingPolicy struct {
	IndexingMode  string      `json:"indexingMode"`
	Automatic     *bool       `json:"automatic"`
	IncludedPaths []indexPath `json:"includedPaths"`
	ExcludedPaths []indexPath `json:"excludedPaths"`
}

type indexPath struct {
	Path string `json:"path"`
}

// defaultIndexingPolicy is what Cosmos DB answers for a container created
// without an indexing policy.
var defaultIndexingPolicy = json.RawMessage(`{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`)

// ownedProps are the members the gateway sets in a container's JSON.
var ownedProps = map[string]bool{"id": true, "defaultTtl": true, "partitionKey": true, "indexingPolicy": true,
	"_rid": true, "_ts": true, "_self": true, "_etag": true, "_docs": true, "_sprocs": true, "_triggers": true,
	"_udfs": true, "_conflicts": true}

// parseCollBody reads container properties: the engine's properties, the
// partition key definition as it will be answered, and the members to keep.
func parseCollBody(b []byte) (engine.ContainerProperties, *collMeta, *apiError) {
	var props engine.ContainerProperties
	var body collBody
	if len(bytes.TrimSpace(b)) == 0 {
		return props, nil, errorf(http.StatusBadRequest, "the request body is empty; container properties are expected")
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return props, nil, errorf(http.StatusBadRequest, "the container properties are not valid JSON: %v", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return props, nil, errorf(http.StatusBadRequest, "the container properties are not a JSON object: %v", err)
	}
	if aerr := validateResourceID("container", body.ID); aerr != nil {
		return props, nil, aerr
	}
	props.ID = body.ID
	meta := &collMeta{Props: map[string]json.RawMessage{}}
	for k, v := range members {
		if !ownedProps[k] {
			meta.Props[k] = v
		}
	}
	if raw := bytes.TrimSpace(body.DefaultTTL); len(raw) > 0 && string(raw) != "null" {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != math.Trunc(f) || !(f == -1 || f >= 1 && f <= math.MaxInt32) {
			return props, nil, errorf(http.StatusBadRequest, "%s", defaultTTLMessage(strings.Trim(string(raw), `"`)))
		}
		props.DefaultTTL = engine.TTL(int32(f))
	}
	if raw := bytes.TrimSpace(body.PartitionKey); len(raw) > 0 && string(raw) != "null" {
		var def pkDef
		if err := json.Unmarshal(raw, &def); err != nil {
			return props, nil, errorf(http.StatusBadRequest, "partitionKey is not a partition key definition ({\"paths\":[\"/key\"],\"kind\":\"Hash\"}): %v", err)
		}
		switch {
		case len(def.Paths) > 1 || strings.EqualFold(def.Kind, "MultiHash"):
			return props, nil, errorf(http.StatusBadRequest, "ebb serve does not support hierarchical partition keys: partitionKey has %d paths (kind %q); give exactly one path, such as {\"paths\":[\"/tenant\"],\"kind\":\"Hash\"}", len(def.Paths), def.Kind)
		case def.Kind != "" && !strings.EqualFold(def.Kind, "Hash"):
			return props, nil, errorf(http.StatusBadRequest, "partitionKey kind %q is not supported: use \"Hash\"", def.Kind)
		}
		if len(def.Paths) == 1 {
			props.PartitionKeyPath = def.Paths[0]
			if def.Version == 0 {
				def.Version = 2
			}
			def.Kind = "Hash"
			meta.PartitionKey, _ = json.Marshal(def)
		}
	}
	meta.IndexingPolicy = defaultIndexingPolicy
	if raw := bytes.TrimSpace(body.IndexingPolicy); len(raw) > 0 && string(raw) != "null" {
		var ip indexingPolicy
		if err := json.Unmarshal(raw, &ip); err != nil {
			return props, nil, errorf(http.StatusBadRequest, "indexingPolicy is not an indexing policy: %v", err)
		}
		switch strings.ToLower(ip.IndexingMode) {
		case "", "consistent":
			props.Indexing = engine.IndexingConsistent
		case "lazy":
			props.Indexing = engine.IndexingLazy
		case "none":
			props.Indexing = engine.IndexingNone
		default:
			return props, nil, errorf(http.StatusBadRequest, "indexingPolicy.indexingMode %q is not consistent, lazy or none", ip.IndexingMode)
		}
		if props.Indexing != engine.IndexingNone {
			for _, p := range ip.IncludedPaths {
				props.IncludedPaths = append(props.IncludedPaths, p.Path)
			}
			for _, p := range ip.ExcludedPaths {
				props.ExcludedPaths = append(props.ExcludedPaths, p.Path)
			}
		}
		meta.IndexingPolicy = raw
	}
	return props, meta, nil
}

// collJSON is a container as the API returns it.
func collJSON(dm *dbMeta, id string, m *collMeta, props engine.ContainerProperties) map[string]any {
	out := map[string]any{}
	for k, v := range m.Props {
		out[k] = v
	}
	rid := collRID(dm.RID, m.RID)
	out["id"] = id
	out["_rid"] = rid
	out["_self"] = "dbs/" + dbRID(dm.RID) + "/colls/" + rid + "/"
	out["_ts"] = m.TS
	out["_etag"] = m.ETag
	out["_docs"] = "docs/"
	out["_sprocs"] = "sprocs/"
	out["_triggers"] = "triggers/"
	out["_udfs"] = "udfs/"
	out["_conflicts"] = "conflicts/"
	out["indexingPolicy"] = m.IndexingPolicy
	if len(m.PartitionKey) > 0 {
		out["partitionKey"] = m.PartitionKey
	}
	if props.DefaultTTL != nil {
		out["defaultTtl"] = *props.DefaultTTL
	}
	return out
}

// throughput reads the throughput headers, which are accepted, kept for
// the offers API, and otherwise ignored.
func (q *request) throughput(m *collMeta) *apiError {
	if v := q.r.Header.Get("x-ms-offer-throughput"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errorf(http.StatusBadRequest, "x-ms-offer-throughput %q is not a positive integer", shorten(v))
		}
		m.Throughput = n
	}
	if v := q.r.Header.Get("x-ms-cosmos-offer-autopilot-settings"); v != "" {
		var a struct {
			MaxThroughput int64 `json:"maxThroughput"`
		}
		if err := json.Unmarshal([]byte(v), &a); err != nil {
			return errorf(http.StatusBadRequest, "x-ms-cosmos-offer-autopilot-settings is not JSON: %v", err)
		}
		m.Throughput, m.Autoscale = a.MaxThroughput, true
	}
	return nil
}

// createContainer answers POST /dbs/{db}/colls.
func (q *request) createContainer() *apiError {
	d, aerr := q.database()
	if aerr != nil {
		return aerr
	}
	b, aerr := q.body()
	if aerr != nil {
		return aerr
	}
	props, meta, aerr := parseCollBody(b)
	if aerr != nil {
		return aerr
	}
	if aerr := q.throughput(meta); aerr != nil {
		return aerr
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.db.CreateContainer(q.r.Context(), props)
	if err != nil {
		return fromEngine(fmt.Errorf("create container %q: %w", props.ID, err))
	}
	d.meta.NextColl++
	d.meta.Seq++
	meta.RID = d.meta.NextColl
	meta.TS = q.s.clock().Unix()
	meta.ETag = etagOf(d.meta.Seq)
	d.meta.Containers[props.ID] = meta
	if err := writeMeta(d.dir, d.meta); err != nil {
		delete(d.meta.Containers, props.ID)
		d.db.DeleteContainer(q.r.Context(), props.ID)
		return fromEngine(err)
	}
	q.noteWrite()
	q.w.Header().Set("etag", meta.ETag)
	return q.replyJSON(http.StatusCreated, collJSON(d.meta, props.ID, meta, c.Properties()))
}

// container returns the database and container the route names.
func (q *request) container() (*database, *engine.Container, *apiError) {
	d, aerr := q.database()
	if aerr != nil {
		return nil, nil, aerr
	}
	c, err := d.db.Container(q.rt.coll)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, nil, errorf(http.StatusNotFound, "%s (container %q)", msgNotFound, shorten(q.rt.coll))
		}
		return nil, nil, fromEngine(err)
	}
	return d, c, nil
}

// collMetaOf is the sidecar entry of container id (one made up if missing).
func (d *database) collMetaOf(id string) *collMeta {
	m := d.meta.Containers[id]
	if m == nil {
		m = &collMeta{ETag: etagOf(0), IndexingPolicy: defaultIndexingPolicy}
	}
	return m
}

// readContainer answers GET /dbs/{db}/colls/{coll}.
func (q *request) readContainer() *apiError {
	d, c, aerr := q.container()
	if aerr != nil {
		return aerr
	}
	d.mu.Lock()
	m := d.collMetaOf(c.ID())
	out := collJSON(d.meta, c.ID(), m, c.Properties())
	d.mu.Unlock()
	q.noteRead()
	q.w.Header().Set("etag", m.ETag)
	return q.replyJSON(http.StatusOK, out)
}

// replaceContainer answers PUT /dbs/{db}/colls/{coll}: a new defaultTtl or
// indexing policy applies at once; the partition key cannot change.
func (q *request) replaceContainer() *apiError {
	d, c, aerr := q.container()
	if aerr != nil {
		return aerr
	}
	b, aerr := q.body()
	if aerr != nil {
		return aerr
	}
	props, meta, aerr := parseCollBody(b)
	if aerr != nil {
		return aerr
	}
	if props.ID != c.ID() {
		return errorf(http.StatusBadRequest, "the container id in the body, %q, differs from %q in the path", shorten(props.ID), shorten(c.ID()))
	}
	old := c.Properties()
	if props.PartitionKeyPath != old.PartitionKeyPath {
		return errorf(http.StatusBadRequest, "Document collection partition key cannot be changed (it is %q, the request has %q).", old.PartitionKeyPath, props.PartitionKeyPath)
	}
	if im := q.r.Header.Get("If-Match"); im != "" {
		d.mu.Lock()
		cur := d.collMetaOf(c.ID()).ETag
		d.mu.Unlock()
		if im != cur {
			return errorf(http.StatusPreconditionFailed, "%s", msgPrecondition)
		}
	}
	props.ChangeFeedRetention = old.ChangeFeedRetention
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := c.SetProperties(q.r.Context(), props); err != nil {
		return fromEngine(fmt.Errorf("replace container %q: %w", props.ID, err))
	}
	prev := d.collMetaOf(c.ID())
	d.meta.Seq++
	meta.RID, meta.TS, meta.ETag = prev.RID, q.s.clock().Unix(), etagOf(d.meta.Seq)
	meta.Throughput, meta.Autoscale = prev.Throughput, prev.Autoscale
	if len(meta.PartitionKey) == 0 {
		meta.PartitionKey = prev.PartitionKey
	}
	d.meta.Containers[c.ID()] = meta
	if err := writeMeta(d.dir, d.meta); err != nil {
		return fromEngine(err)
	}
	q.noteWrite()
	q.w.Header().Set("etag", meta.ETag)
	return q.replyJSON(http.StatusOK, collJSON(d.meta, c.ID(), meta, c.Properties()))
}

// deleteContainer answers DELETE /dbs/{db}/colls/{coll}.
func (q *request) deleteContainer() *apiError {
	d, aerr := q.database()
	if aerr != nil {
		return aerr
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.db.DeleteContainer(q.r.Context(), q.rt.coll); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return errorf(http.StatusNotFound, "%s (container %q)", msgNotFound, shorten(q.rt.coll))
		}
		return fromEngine(err)
	}
	delete(d.meta.Containers, q.rt.coll)
	if err := writeMeta(d.dir, d.meta); err != nil {
		q.s.log.Error("delete container: sidecar", "err", err) // reconciled at the next start
	}
	q.noteWrite()
	return q.reply(http.StatusNoContent, nil)
}

// queryContainers answers POST /dbs/{db}/colls with a query, and GET.
func (q *request) queryContainers() *apiError {
	d, aerr := q.database()
	if aerr != nil {
		return aerr
	}
	spec, aerr := q.readQuery()
	if aerr != nil {
		return aerr
	}
	var docs [][]byte
	d.mu.Lock()
	for _, id := range d.db.Containers() {
		c, err := d.db.Container(id)
		if err != nil {
			continue
		}
		b, _ := json.Marshal(collJSON(d.meta, id, d.collMetaOf(id), c.Properties()))
		docs = append(docs, b)
	}
	rid := dbRID(d.meta.RID)
	d.mu.Unlock()
	rows, aerr := runOver(spec, docs)
	if aerr != nil {
		return aerr
	}
	q.noteRead()
	return q.replyFeed("DocumentCollections", rid, rows)
}

// pkRanges answers GET .../colls/{coll}/pkranges: ebb has one range, the
// whole key space.
func (q *request) pkRanges() *apiError {
	d, c, aerr := q.container()
	if aerr != nil {
		return aerr
	}
	d.mu.Lock()
	m := d.collMetaOf(c.ID())
	rid := collRID(d.meta.RID, m.RID)
	self := "dbs/" + dbRID(d.meta.RID) + "/colls/" + rid + "/pkranges/"
	ts := m.TS
	d.mu.Unlock()
	etag := `"` + rid + `-pkranges-0"`
	if inm := q.r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		q.w.Header().Set("etag", etag)
		return q.reply(http.StatusNotModified, nil)
	}
	q.noteRead()
	q.w.Header().Set("etag", etag)
	q.w.Header().Set("x-ms-item-count", "1")
	return q.replyJSON(http.StatusOK, map[string]any{
		"_rid": rid,
		"PartitionKeyRanges": []map[string]any{{
			"_rid": rid, "id": "0", "_etag": etag, "minInclusive": "", "maxExclusive": "FF",
			"ridPrefix": 0, "_self": self + "0/", "throughputFraction": 1, "status": "online",
			"parents": []string{}, "_ts": ts, "lsn": 1,
		}},
		"_count": 1,
	})
}
