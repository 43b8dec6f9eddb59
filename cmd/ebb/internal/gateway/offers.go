package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Offers: the throughput a database or container was created with is
// accepted and ignored (ebb has no request units), but kept so that the
// SDKs' throughput calls read back what they set. An offer's id is
// "d<db rid>" or "c<db rid><container rid>" in hex.

// offerRef is where an offer's throughput is kept.
type offerRef struct {
	d    *database
	coll string // "" for the database's own offer
}

// offerJSON is an offer as the API returns it; d.mu is held.
func offerJSON(d *database, coll string) (map[string]any, bool) {
	m := d.meta
	tp, auto, ts := m.Throughput, m.Autoscale, m.TS
	id := fmt.Sprintf("d%08x", m.RID)
	rid := dbRID(m.RID)
	self := "dbs/" + rid + "/"
	if coll != "" {
		cm := m.Containers[coll]
		if cm == nil {
			return nil, false
		}
		tp, auto, ts = cm.Throughput, cm.Autoscale, cm.TS
		id = fmt.Sprintf("c%08x%08x", m.RID, cm.RID)
		rid = collRID(m.RID, cm.RID)
		self += "colls/" + rid + "/"
	}
	if tp <= 0 {
		return nil, false
	}
	content := map[string]any{"offerThroughput": tp}
	if auto {
		content = map[string]any{"offerAutopilotSettings": map[string]any{"maxThroughput": tp}, "offerThroughput": tp / 10}
	}
	return map[string]any{
		"id": id, "_rid": id, "_self": "offers/" + id + "/", "offerResourceId": rid, "resource": self,
		"offerType": "Invalid", "offerVersion": "V2", "content": content,
		"_etag": fmt.Sprintf("\"%s-%d\"", id, tp), "_ts": ts,
	}, true
}

// allOffers lists every offer with where it is kept.
func (s *Server) allOffers() ([][]byte, map[string]offerRef) {
	var docs [][]byte
	refs := map[string]offerRef{}
	for _, id := range s.databaseIDs() {
		s.mu.RLock()
		d := s.dbs[id]
		s.mu.RUnlock()
		if d == nil {
			continue
		}
		d.mu.Lock()
		colls := []string{""}
		for c := range d.meta.Containers {
			colls = append(colls, c)
		}
		for _, c := range colls {
			if o, ok := offerJSON(d, c); ok {
				b, _ := json.Marshal(o)
				docs = append(docs, b)
				refs[o["id"].(string)] = offerRef{d, c}
			}
		}
		d.mu.Unlock()
	}
	return docs, refs
}

// offers answers /offers: a query or list of offers, an offer's read, and
// its replace (the new throughput is kept, and ignored).
func (q *request) offers() *apiError {
	docs, refs := q.s.allOffers()
	if q.rt.feed {
		spec, aerr := q.readQuery()
		if aerr != nil {
			return aerr
		}
		rows, aerr := runOver(spec, docs)
		if aerr != nil {
			return aerr
		}
		q.noteRead()
		return q.replyFeed("Offers", "", rows)
	}
	ref, ok := refs[q.rt.addr]
	if !ok {
		return errorf(http.StatusNotFound, "%s (offer %q)", msgNotFound, shorten(q.rt.addr))
	}
	switch q.r.Method {
	case http.MethodGet:
	case http.MethodPut:
		var body struct {
			Content struct {
				Throughput int64 `json:"offerThroughput"`
				Autopilot  *struct {
					MaxThroughput int64 `json:"maxThroughput"`
				} `json:"offerAutopilotSettings"`
			} `json:"content"`
		}
		if aerr := q.jsonBody(&body); aerr != nil {
			return aerr
		}
		tp, auto := body.Content.Throughput, false
		if a := body.Content.Autopilot; a != nil && a.MaxThroughput > 0 {
			tp, auto = a.MaxThroughput, true
		}
		if tp <= 0 {
			return errorf(http.StatusBadRequest, "the offer has no positive content.offerThroughput or content.offerAutopilotSettings.maxThroughput")
		}
		d := ref.d
		d.mu.Lock()
		if ref.coll == "" {
			d.meta.Throughput, d.meta.Autoscale = tp, auto
		} else if cm := d.meta.Containers[ref.coll]; cm != nil {
			cm.Throughput, cm.Autoscale = tp, auto
			cm.TS = time.Now().Unix()
		}
		err := writeMeta(d.dir, d.meta)
		d.mu.Unlock()
		if err != nil {
			return fromEngine(err)
		}
		q.noteWrite()
	default:
		return errorf(http.StatusMethodNotAllowed, "%s is not allowed on an offer", q.r.Method)
	}
	ref.d.mu.Lock()
	o, ok := offerJSON(ref.d, ref.coll)
	ref.d.mu.Unlock()
	if !ok {
		return errorf(http.StatusNotFound, "%s (offer %q)", msgNotFound, shorten(q.rt.addr))
	}
	q.noteRead()
	return q.replyJSON(http.StatusOK, o)
}
