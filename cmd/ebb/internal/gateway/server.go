package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// Config configures a Server.
type Config struct {
	// Dir holds the databases; it is created if missing.
	Dir string
	// MasterKey is the base64 master key every request is signed with.
	// Default: EmulatorKey.
	MasterKey string
	// Endpoint is the address the account metadata advertises
	// ("https://127.0.0.1:8081/"); SDKs send every request after the first
	// one there. It can be set later with SetEndpoint.
	Endpoint string
	// Clock is the time of writes, expiry and the x-ms-date check.
	// Default: time.Now.
	Clock func() time.Time
	// Engine are the options each database is opened with (Clock is set
	// from Clock). Nil: the engine's defaults.
	Engine *engine.Options
	// Logger receives what goes wrong inside (a 500 and why). Default:
	// discard.
	Logger *slog.Logger
}

// Server answers the Cosmos DB REST API. It is an http.Handler.
type Server struct {
	cfg    Config
	key    []byte
	clock  func() time.Time
	log    *slog.Logger
	writes atomic.Uint64 // the session token's counter

	endpoint atomic.Value // string

	mu     sync.RWMutex
	dbs    map[string]*database // by id
	nextDB uint32
	closed bool
}

// database is one Cosmos database: an engine.DB and its sidecar.
type database struct {
	dir string
	db  *engine.DB

	mu   sync.Mutex // guards meta and its file
	meta *dbMeta
}

// New opens every database under cfg.Dir.
func New(cfg Config) (*Server, error) {
	if cfg.MasterKey == "" {
		cfg.MasterKey = EmulatorKey
	}
	key, err := base64.StdEncoding.DecodeString(cfg.MasterKey)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("gateway: the master key is not base64: %v", err)
	}
	if cfg.Dir == "" {
		return nil, errors.New("gateway: no directory")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s := &Server{cfg: cfg, key: key, clock: cfg.Clock, log: cfg.Logger, dbs: map[string]*database{}}
	s.endpoint.Store(cfg.Endpoint)
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(cfg.Dir, e.Name())
		if strings.HasPrefix(e.Name(), ".trash-") {
			os.RemoveAll(dir) // a delete that did not finish
			continue
		}
		if !strings.HasPrefix(e.Name(), "db-") {
			continue
		}
		m, err := readMeta(dir)
		if errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(dir) // a create that did not finish
			continue
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("gateway: %w", err)
		}
		d, err := s.openDatabase(dir, m)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.dbs[m.ID] = d
		s.nextDB = max(s.nextDB, m.RID)
	}
	return s, nil
}

// openDatabase opens the engine under dir and reconciles the sidecar with
// the engine's containers: a container the sidecar lacks (created just
// before a crash) gets fresh metadata, and sidecar entries without a
// container are dropped.
func (s *Server) openDatabase(dir string, m *dbMeta) (*database, error) {
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(tmps) > 0 {
		for _, t := range tmps { // sidecar writes cut short
			os.Remove(t)
		}
	}
	db, err := engine.Open(filepath.Join(dir, dataDir), s.engineOptions())
	if err != nil {
		return nil, fmt.Errorf("gateway: open database %q: %w", m.ID, err)
	}
	d := &database{dir: dir, db: db, meta: m}
	changed := false
	have := map[string]bool{}
	for _, id := range db.Containers() {
		have[id] = true
		if m.Containers[id] == nil {
			m.NextColl++
			m.Seq++
			m.Containers[id] = &collMeta{RID: m.NextColl, TS: s.clock().Unix(), ETag: etagOf(m.Seq)}
			changed = true
		}
	}
	for id := range m.Containers {
		if !have[id] {
			delete(m.Containers, id)
			changed = true
		}
	}
	if changed {
		if err := writeMeta(dir, m); err != nil {
			db.Close()
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	return d, nil
}

func (s *Server) engineOptions() *engine.Options {
	var o engine.Options
	if s.cfg.Engine != nil {
		o = *s.cfg.Engine
	}
	o.Clock = s.clock
	return &o
}

// SetEndpoint sets the address the account metadata advertises.
func (s *Server) SetEndpoint(e string) { s.endpoint.Store(e) }

// Close closes every database. Requests after it get 503.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, d := range s.dbs {
		if err := d.db.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.dbs = map[string]*database{}
	return errors.Join(errs...)
}

// maxBody bounds a request body: a document's 2 MiB with room for system
// properties and whitespace, a batch's 2 MiB of documents with its
// envelope.
const maxBody = 4<<20 + 64<<10

// request is one request being served.
type request struct {
	s  *Server
	w  http.ResponseWriter
	r  *http.Request
	rt route
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("x-ms-activity-id", newActivityID())
	h.Set("x-ms-request-charge", "1")
	h.Set("x-ms-gatewayversion", "version=2.14.0")
	h.Set("x-ms-serviceversion", "version=2.14.0.0")
	h.Set("Content-Type", "application/json")
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", v)
			writeError(w, errorf(http.StatusInternalServerError, "internal error: %v", v))
		}
	}()
	rt, err := parseRoute(r.URL.EscapedPath())
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "%s", err.Error()))
		return
	}
	if ae := checkAuth(r, s.key, rt, s.clock()); ae != nil {
		writeError(w, &apiError{status: ae.status, msg: ae.msg})
		return
	}
	if r.ContentLength > maxBody {
		writeError(w, errorf(http.StatusRequestEntityTooLarge, "%s", msgTooLarge))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	q := &request{s: s, w: w, r: r, rt: rt}
	if aerr := q.dispatch(); aerr != nil {
		writeError(w, aerr)
	}
}

// dispatch routes the request to its handler.
func (q *request) dispatch() *apiError {
	m := q.r.Method
	switch q.rt.kind {
	case "":
		if m == http.MethodGet {
			return q.account()
		}
	case "offers":
		return q.offers()
	case "dbs":
		switch {
		case q.rt.feed && m == http.MethodPost && q.isQuery():
			return q.queryDatabases()
		case q.rt.feed && m == http.MethodPost:
			return q.createDatabase()
		case q.rt.feed && m == http.MethodGet:
			return q.queryDatabases()
		case !q.rt.feed && m == http.MethodGet:
			return q.readDatabase()
		case !q.rt.feed && m == http.MethodDelete:
			return q.deleteDatabase()
		}
	case "colls":
		switch {
		case q.rt.feed && m == http.MethodPost && q.isQuery():
			return q.queryContainers()
		case q.rt.feed && m == http.MethodPost:
			return q.createContainer()
		case q.rt.feed && m == http.MethodGet:
			return q.queryContainers()
		case !q.rt.feed && m == http.MethodGet:
			return q.readContainer()
		case !q.rt.feed && m == http.MethodPut:
			return q.replaceContainer()
		case !q.rt.feed && m == http.MethodDelete:
			return q.deleteContainer()
		}
	case "pkranges":
		if m == http.MethodGet {
			return q.pkRanges()
		}
	case "docs":
		switch {
		case q.rt.feed && m == http.MethodPost && q.isQuery():
			return q.queryItems()
		case q.rt.feed && m == http.MethodPost && isTrue(q.r.Header.Get("x-ms-cosmos-is-batch-request")):
			return q.batch()
		case q.rt.feed && m == http.MethodPost:
			return q.createItem()
		case q.rt.feed && m == http.MethodGet && q.r.Header.Get("A-IM") != "":
			return q.changeFeed()
		case q.rt.feed && m == http.MethodGet:
			return q.readFeed()
		case !q.rt.feed && m == http.MethodGet:
			return q.readItem()
		case !q.rt.feed && m == http.MethodPut:
			return q.replaceItem()
		case !q.rt.feed && m == http.MethodDelete:
			return q.deleteItem()
		case !q.rt.feed && m == http.MethodPatch:
			return q.patchItem()
		}
	}
	return errorf(http.StatusMethodNotAllowed, "%s is not allowed on %s", m, shorten(q.r.URL.Path))
}

// isQuery reports whether a POST is a query.
func (q *request) isQuery() bool {
	ct, _, _ := strings.Cut(q.r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/query+json") || isTrue(q.r.Header.Get("x-ms-documentdb-isquery")) || isTrue(q.r.Header.Get("x-ms-documentdb-query"))
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// body reads the request body whole; one over maxBody is a 413.
func (q *request) body() ([]byte, *apiError) {
	b, err := io.ReadAll(q.r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "%s", msgTooLarge)
		}
		return nil, errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	return b, nil
}

// jsonBody decodes the request body into v, naming what is wrong.
func (q *request) jsonBody(v any) *apiError {
	b, aerr := q.body()
	if aerr != nil {
		return aerr
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return errorf(http.StatusBadRequest, "the request body is empty; a JSON object is expected")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(http.StatusBadRequest, "the request body is not valid JSON for this request: %v", err)
	}
	return nil
}

// noteWrite sets the session token after a write.
func (q *request) noteWrite() {
	q.w.Header().Set("x-ms-session-token", "0:-1#"+strconv.FormatUint(q.s.writes.Add(1), 10))
}

// noteRead sets the session token of a read.
func (q *request) noteRead() {
	q.w.Header().Set("x-ms-session-token", "0:-1#"+strconv.FormatUint(max(q.s.writes.Load(), 1), 10))
}

// reply writes status and body (nil: no body).
func (q *request) reply(status int, body []byte) *apiError {
	if body == nil {
		q.w.Header().Del("Content-Type")
		q.w.WriteHeader(status)
		return nil
	}
	q.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	q.w.WriteHeader(status)
	q.w.Write(body)
	return nil
}

// replyJSON writes v as JSON.
func (q *request) replyJSON(status int, v any) *apiError {
	b, err := json.Marshal(v)
	if err != nil {
		return errorf(http.StatusInternalServerError, "encode the response: %v", err)
	}
	return q.reply(status, b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.substatus != 0 {
		h.Set("x-ms-substatus", strconv.Itoa(e.substatus))
	}
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{codeOf(e.status), e.msg})
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.status)
	w.Write(b)
}

func newActivityID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// database returns the database the route names, or 404.
func (q *request) database() (*database, *apiError) {
	q.s.mu.RLock()
	defer q.s.mu.RUnlock()
	if q.s.closed {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	d := q.s.dbs[q.rt.db]
	if d == nil {
		return nil, errorf(http.StatusNotFound, "%s (database %q)", msgNotFound, shorten(q.rt.db))
	}
	return d, nil
}

// databaseIDs lists the databases in id order.
func (s *Server) databaseIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.dbs))
	for id := range s.dbs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
