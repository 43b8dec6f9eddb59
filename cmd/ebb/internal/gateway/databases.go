package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// dbJSON is a database as the API returns it.
func dbJSON(m *dbMeta) map[string]any {
	rid := dbRID(m.RID)
	return map[string]any{
		"id":     m.ID,
		"_rid":   rid,
		"_self":  "dbs/" + rid + "/",
		"_etag":  m.ETag,
		"_colls": "colls/",
		"_users": "users/",
		"_ts":    m.TS,
	}
}

// validateResourceID checks a database or container id as Cosmos DB does:
// 1 to 255 characters, none of / \ ? # or a control character, and no
// trailing space.
func validateResourceID(what, id string) *apiError {
	if id == "" {
		return errorf(http.StatusBadRequest, "The %s id is missing: give \"id\" in the body.", what)
	}
	if n := utf8.RuneCountInString(id); n > 255 {
		return errorf(http.StatusBadRequest, "The %s id is invalid: %d characters, more than 255", what, n)
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == '/' || r == '\\' || r == '?' || r == '#' }); i >= 0 {
		return errorf(http.StatusBadRequest, "The %s id %q is invalid: it holds %q, and ids may not hold / \\ ? # or control characters", what, shorten(id), id[i:i+1])
	}
	if strings.HasSuffix(id, " ") {
		return errorf(http.StatusBadRequest, "The %s id %q is invalid: it ends with a space", what, shorten(id))
	}
	return nil
}

// createDatabase answers POST /dbs.
func (q *request) createDatabase() *apiError {
	var body struct {
		ID string `json:"id"`
	}
	if aerr := q.jsonBody(&body); aerr != nil {
		return aerr
	}
	if aerr := validateResourceID("database", body.ID); aerr != nil {
		return aerr
	}
	var tp collMeta
	if aerr := q.throughput(&tp); aerr != nil {
		return aerr
	}
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	if s.dbs[body.ID] != nil {
		return errorf(http.StatusConflict, "%s (database %q)", msgConflict, shorten(body.ID))
	}
	dir := filepath.Join(s.cfg.Dir, dirName(body.ID))
	if err := os.RemoveAll(dir); err != nil { // a leftover of a create that failed
		return fromEngine(fmt.Errorf("create database %q: %w", body.ID, err))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fromEngine(fmt.Errorf("create database %q: %w", body.ID, err))
	}
	s.nextDB++
	m := &dbMeta{ID: body.ID, RID: s.nextDB, TS: s.clock().Unix(), Seq: 1, Containers: map[string]*collMeta{}}
	m.ETag = etagOf(m.Seq)
	m.Throughput, m.Autoscale = tp.Throughput, tp.Autoscale
	d, err := s.openDatabase(dir, m)
	if err == nil {
		if err = writeMeta(dir, m); err != nil {
			d.db.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return fromEngine(fmt.Errorf("create database %q: %w", body.ID, err))
	}
	s.dbs[body.ID] = d
	q.noteWrite()
	q.w.Header().Set("etag", m.ETag)
	return q.replyJSON(http.StatusCreated, dbJSON(m))
}

// readDatabase answers GET /dbs/{db}.
func (q *request) readDatabase() *apiError {
	d, aerr := q.database()
	if aerr != nil {
		return aerr
	}
	d.mu.Lock()
	out := dbJSON(d.meta)
	d.mu.Unlock()
	q.noteRead()
	q.w.Header().Set("etag", out["_etag"].(string))
	return q.replyJSON(http.StatusOK, out)
}

// deleteDatabase answers DELETE /dbs/{db}: the engine is closed and its
// folder removed (renamed aside first, so a crash midway leaves no half
// database).
func (q *request) deleteDatabase() *apiError {
	s := q.s
	s.mu.Lock()
	d := s.dbs[q.rt.db]
	if d == nil {
		s.mu.Unlock()
		return errorf(http.StatusNotFound, "%s (database %q)", msgNotFound, shorten(q.rt.db))
	}
	delete(s.dbs, q.rt.db)
	s.mu.Unlock()
	err := d.db.Close()
	trash := filepath.Join(s.cfg.Dir, ".trash-"+filepath.Base(d.dir))
	if rerr := os.Rename(d.dir, trash); rerr == nil {
		syncDir(s.cfg.Dir)
		os.RemoveAll(trash)
	} else if !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		s.log.Error("delete database", "id", q.rt.db, "err", err)
	}
	q.noteWrite()
	return q.reply(http.StatusNoContent, nil)
}

// queryDatabases answers POST /dbs with a query, and GET /dbs.
func (q *request) queryDatabases() *apiError {
	spec, aerr := q.readQuery()
	if aerr != nil {
		return aerr
	}
	var docs [][]byte
	for _, id := range q.s.databaseIDs() {
		q.s.mu.RLock()
		d := q.s.dbs[id]
		q.s.mu.RUnlock()
		if d == nil {
			continue
		}
		d.mu.Lock()
		b, _ := json.Marshal(dbJSON(d.meta))
		d.mu.Unlock()
		docs = append(docs, b)
	}
	rows, aerr := runOver(spec, docs)
	if aerr != nil {
		return aerr
	}
	q.noteRead()
	return q.replyFeed("Databases", "", rows)
}

// replyFeed answers a list or query of databases or containers: one page
// with every row.
func (q *request) replyFeed(member, rid string, rows []json.RawMessage) *apiError {
	if rows == nil {
		rows = []json.RawMessage{}
	}
	q.w.Header().Set("x-ms-item-count", fmt.Sprint(len(rows)))
	return q.replyJSON(http.StatusOK, map[string]any{"_rid": rid, member: rows, "_count": len(rows)})
}
