package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ebbdb/ebb/engine"
)

// itemScope is what point operations run on: a Partition, or a Container
// for the calls that take the partition key from the document.
type itemScope interface {
	Read(ctx context.Context, id string) (engine.Item, error)
	Create(ctx context.Context, doc []byte, opts ...engine.WriteOption) (engine.Item, error)
	Upsert(ctx context.Context, doc []byte, opts ...engine.WriteOption) (engine.Item, error)
	Replace(ctx context.Context, doc []byte, opts ...engine.WriteOption) (engine.Item, error)
	Delete(ctx context.Context, id string, opts ...engine.WriteOption) error
}

// maxItemBody is the largest item write body: a document's 2 MiB and room
// for the system properties it may carry back.
const maxItemBody = engine.MaxDocumentSize + 16<<10

const pkHeader = "x-ms-documentdb-partitionkey"

// partitionKey reads the partition key header; ok is false when absent.
func (q *request) partitionKey() (k engine.PartitionKey, ok bool, aerr *apiError) {
	vals := q.r.Header.Values(pkHeader)
	if len(vals) == 0 {
		return k, false, nil
	}
	if len(vals) > 1 {
		return k, false, errorf(http.StatusBadRequest, "the %s header is given %d times", pkHeader, len(vals))
	}
	k, err := engine.ParsePartitionKey([]byte(vals[0]))
	if err != nil {
		return k, false, &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf("the %s header %q is not a partition key (a JSON array of one value, such as [\"a\"]): %s", pkHeader, shorten(vals[0]), clean(err))}
	}
	return k, true, nil
}

// pointScope is the scope of a point read, replace, delete or patch: the
// partition the header names. A container with a key needs the header; one
// without a key takes it absent or None.
func (q *request) pointScope(c *engine.Container) (*engine.Partition, *apiError) {
	k, ok, aerr := q.partitionKey()
	if aerr != nil {
		return nil, aerr
	}
	if !ok && c.Properties().PartitionKeyPath != "" {
		return nil, &apiError{status: http.StatusBadRequest, substatus: subPartitionKeyMismatch,
			msg: fmt.Sprintf("The partition key supplied in the %s header has fewer components than defined in the collection: container %q is partitioned on %q; send the item's partition key value, as [\"value\"].", pkHeader, c.ID(), c.Properties().PartitionKeyPath)}
	}
	return c.Partition(k), nil
}

// writeScope is the scope of a create or upsert: the header's partition,
// or, without the header, the container (the key comes from the document).
func (q *request) writeScope(c *engine.Container) (itemScope, *apiError) {
	k, ok, aerr := q.partitionKey()
	if aerr != nil {
		return nil, aerr
	}
	if !ok {
		return c, nil
	}
	return c.Partition(k), nil
}

// itemCtx is a container being worked on, with what rendering needs.
type itemCtx struct {
	d       *database
	c       *engine.Container
	dbRID   uint32
	collRID uint32
}

func (q *request) itemContainer() (*itemCtx, *apiError) {
	d, c, aerr := q.container()
	if aerr != nil {
		return nil, aerr
	}
	d.mu.Lock()
	ic := &itemCtx{d: d, c: c, dbRID: d.meta.RID, collRID: d.collMetaOf(c.ID()).RID}
	d.mu.Unlock()
	return ic, nil
}

// render is an item's body with every system property: the engine's id,
// _ts and _etag, and _rid, _self and _attachments.
func (ic *itemCtx) render(it engine.Item) []byte {
	return ic.withSystem(it.Body, it.PartitionKey, it.ID)
}

// withSystem appends _rid, _self and _attachments to a JSON object.
func (ic *itemCtx) withSystem(body []byte, pk engine.PartitionKey, id string) []byte {
	b := bytes.TrimRight(body, " \t\r\n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return body
	}
	rid := docRID(ic.dbRID, ic.collRID, pk.String(), id)
	out := make([]byte, 0, len(b)+128)
	out = append(out, b[:len(b)-1]...)
	if len(bytes.TrimSpace(b[:len(b)-1])) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"_rid":"`...)
	out = append(out, rid...)
	out = append(out, `","_self":"dbs/`...)
	out = append(out, dbRID(ic.dbRID)...)
	out = append(out, "/colls/"...)
	out = append(out, collRID(ic.dbRID, ic.collRID)...)
	out = append(out, "/docs/"...)
	out = append(out, rid...)
	out = append(out, `/","_attachments":"attachments/"}`...)
	return out
}

// minimal reports whether the client asked for no body on writes.
func (q *request) minimal() bool {
	for _, v := range q.r.Header.Values("Prefer") {
		if strings.Contains(strings.ToLower(v), "return=minimal") {
			return true
		}
	}
	return false
}

// replyItem answers a read or write of one item.
func (q *request) replyItem(ic *itemCtx, status int, it engine.Item, write bool) *apiError {
	q.w.Header().Set("etag", it.ETag)
	if write {
		q.noteWrite()
		if q.minimal() {
			q.w.Header().Set("Content-Length", "0")
			q.w.WriteHeader(status)
			return nil
		}
	} else {
		q.noteRead()
	}
	return q.reply(status, ic.render(it))
}

// itemBody reads an item write's body: 413 past the document limit.
func (q *request) itemBody() ([]byte, *apiError) {
	b, aerr := q.body()
	if aerr != nil {
		return nil, aerr
	}
	if len(b) > maxItemBody {
		return nil, errorf(http.StatusRequestEntityTooLarge, "%s", msgTooLarge)
	}
	return b, nil
}

// writeOpts are the write's options from If-Match and Prefer.
func (q *request) writeOpts() []engine.WriteOption {
	opts := q.createOpts()
	if im := q.r.Header.Get("If-Match"); im != "" && im != "*" {
		opts = append(opts, engine.IfMatch(im))
	}
	return opts
}

// createOpts are a create's options, from Prefer (a create has no etag to
// match).
func (q *request) createOpts() []engine.WriteOption {
	if q.minimal() {
		return []engine.WriteOption{engine.OmitBody()} // replyItem sends no body
	}
	return nil
}

// createItem answers POST .../docs: a create, or an upsert with
// x-ms-documentdb-is-upsert.
func (q *request) createItem() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	body, aerr := q.itemBody()
	if aerr != nil {
		return aerr
	}
	scope, aerr := q.writeScope(ic.c)
	if aerr != nil {
		return aerr
	}
	ctx := q.r.Context()
	if isTrue(q.r.Header.Get("x-ms-documentdb-is-upsert")) {
		status := http.StatusCreated
		// The status says whether the upsert replaced an item: read first
		// (an item created or deleted in between only changes the status).
		if id, ok := docID(body); ok {
			if _, err := scope.Read(ctx, id); err == nil {
				status = http.StatusOK
			}
		}
		it, err := scope.Upsert(ctx, body, q.writeOpts()...)
		if err != nil {
			return fromEngine(err)
		}
		return q.replyItem(ic, status, it, true)
	}
	it, err := scope.Create(ctx, body, q.createOpts()...)
	if err != nil {
		return fromEngine(err)
	}
	return q.replyItem(ic, http.StatusCreated, it, true)
}

// docID is the string "id" of a JSON object, if it has one.
func docID(body []byte) (string, bool) {
	var v struct {
		ID *string `json:"id"`
	}
	if json.Unmarshal(body, &v) != nil || v.ID == nil {
		return "", false
	}
	return *v.ID, true
}

// readItem answers GET .../docs/{id}; If-None-Match with the current etag
// is a 304.
func (q *request) readItem() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	p, aerr := q.pointScope(ic.c)
	if aerr != nil {
		return aerr
	}
	it, err := p.Read(q.r.Context(), q.rt.doc)
	if err != nil {
		return fromEngine(err)
	}
	if inm := q.r.Header.Get("If-None-Match"); inm != "" && inm == it.ETag {
		q.w.Header().Set("etag", it.ETag)
		return q.reply(http.StatusNotModified, nil)
	}
	return q.replyItem(ic, http.StatusOK, it, false)
}

// replaceItem answers PUT .../docs/{id}, conditional on If-Match.
func (q *request) replaceItem() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	body, aerr := q.itemBody()
	if aerr != nil {
		return aerr
	}
	p, aerr := q.pointScope(ic.c)
	if aerr != nil {
		return aerr
	}
	if id, ok := docID(body); ok && id != q.rt.doc {
		return errorf(http.StatusBadRequest, "the id in the body, %q, differs from the id in the path, %q", shorten(id), shorten(q.rt.doc))
	}
	it, err := p.Replace(q.r.Context(), body, q.writeOpts()...)
	if err != nil {
		return fromEngine(err)
	}
	return q.replyItem(ic, http.StatusOK, it, true)
}

// deleteItem answers DELETE .../docs/{id}, conditional on If-Match.
func (q *request) deleteItem() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	p, aerr := q.pointScope(ic.c)
	if aerr != nil {
		return aerr
	}
	if err := p.Delete(q.r.Context(), q.rt.doc, q.writeOpts()...); err != nil {
		return fromEngine(err)
	}
	q.noteWrite()
	return q.reply(http.StatusNoContent, nil)
}
