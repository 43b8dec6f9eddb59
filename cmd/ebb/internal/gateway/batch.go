package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/ebbdb/ebb/engine"
)

// batchOp is one operation of a transactional batch request.
type batchOp struct {
	OperationType string          `json:"operationType"`
	ID            string          `json:"id"`
	IfMatch       string          `json:"ifMatch"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
}

// batchResult is one operation's result in the response.
type batchResult struct {
	StatusCode    int             `json:"statusCode"`
	SubStatusCode int             `json:"subStatusCode,omitempty"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
}

// maxBatchOps is Cosmos DB's limit of operations in a batch.
const maxBatchOps = 100

// batchItem is one item a batch touches: as stored before the batch (base)
// and as the operations so far leave it.
type batchItem struct {
	id         string
	base       engine.Item
	baseExists bool
	exists     bool
	body       []byte // the current document; nil when it does not exist
	written    bool   // an operation of the batch wrote it
}

// batchRun is one attempt at a batch: the operations applied in order to
// the items they touch, then committed as one engine batch.
type batchRun struct {
	q       *request
	p       *engine.Partition
	items   map[string]*batchItem
	order   []*batchItem // in the order first touched
	results []batchResult
	// bodyAt is the document each operation leaves or reads (nil for a
	// delete), itemOf the item each operation touched.
	bodyAt [][]byte
	itemOf []*batchItem
}

// batch answers a transactional batch (POST .../docs with
// x-ms-cosmos-is-batch-request): every operation in one partition, applied
// in order, each seeing the ones before, all or nothing.
//
// The operations are applied here to the items they touch, read first from
// the engine; then each touched item's final state is committed as one
// engine batch (a create, a replace or a delete, conditioned on the etag
// read), so several operations on one item become one write. A concurrent
// write to one of them between the reads and the commit makes the whole
// batch run again. Answers: 200 with every result, or 207 with the failed
// operation's status and 424 for the others. Limits: the _etag and _ts of
// every result on an item are those of its final version, and the engine
// validates (ttl, size, partition key) the final version of each item only.
func (q *request) batch() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	p, aerr := q.pointScope(ic.c)
	if aerr != nil {
		return aerr
	}
	body, aerr := q.body()
	if aerr != nil {
		return aerr
	}
	var ops []batchOp
	if err := json.Unmarshal(body, &ops); err != nil {
		return errorf(http.StatusBadRequest, "the batch body is not a JSON array of operations: %v", err)
	}
	if len(ops) == 0 {
		return errorf(http.StatusBadRequest, "the batch has no operations")
	}
	if len(ops) > maxBatchOps {
		return errorf(http.StatusBadRequest, "Batch request has more operations than what is supported: %d, the limit is %d.", len(ops), maxBatchOps)
	}
	for i, op := range ops {
		switch strings.ToLower(op.OperationType) {
		case "create", "upsert", "replace", "delete", "read", "patch":
		default:
			return errorf(http.StatusBadRequest, "batch operation %d has operationType %q: expected Create, Upsert, Replace, Delete, Read or Patch", i, shorten(op.OperationType))
		}
	}
	for attempt := 0; ; attempt++ {
		run := &batchRun{q: q, p: p, items: map[string]*batchItem{}, results: make([]batchResult, len(ops)),
			bodyAt: make([][]byte, len(ops)), itemOf: make([]*batchItem, len(ops))}
		for i, op := range ops {
			if aerr := run.apply(i, op); aerr != nil {
				return q.batchFailed(run.results, i, aerr)
			}
		}
		final, failed, aerr := run.commit(ic)
		if aerr != nil && failed >= 0 && attempt < patchRetries &&
			(aerr.status == http.StatusPreconditionFailed || aerr.status == http.StatusConflict || aerr.status == http.StatusNotFound) {
			continue // another writer changed an item since it was read: run again
		}
		if aerr != nil && failed >= 0 {
			return q.batchFailed(run.results, run.lastOp(failed), aerr)
		}
		if aerr != nil {
			return aerr
		}
		run.fill(ic, ops, final)
		return q.replyJSON(http.StatusOK, run.results)
	}
}

// item loads the item id, once.
func (r *batchRun) item(id string) (*batchItem, *apiError) {
	if it := r.items[id]; it != nil {
		return it, nil
	}
	it := &batchItem{id: id}
	got, err := r.p.Read(r.q.r.Context(), id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
	case err != nil:
		return nil, fromEngine(err)
	default:
		it.base, it.baseExists, it.exists, it.body = got, true, true, got.Body
	}
	r.items[id] = it
	r.order = append(r.order, it)
	return it, nil
}

// apply applies operation i to the items.
func (r *batchRun) apply(i int, op batchOp) *apiError {
	kind := strings.ToLower(op.OperationType)
	id := op.ID
	if kind == "create" || kind == "upsert" || kind == "replace" {
		bid, ok := docID(op.ResourceBody)
		if !ok {
			return errorf(http.StatusBadRequest, "batch operation %d: the resource body has no string id", i)
		}
		if kind == "replace" && id != "" && bid != id {
			return errorf(http.StatusBadRequest, "the id in the body, %q, differs from the operation's id, %q", shorten(bid), shorten(id))
		}
		id = bid
	}
	it, aerr := r.item(id)
	if aerr != nil {
		return aerr
	}
	r.itemOf[i] = it
	if kind != "create" && kind != "upsert" && !it.exists {
		return errorf(http.StatusNotFound, "%s", msgNotFound)
	}
	if m := op.IfMatch; m != "" && m != "*" && it.exists && (it.written || m != it.base.ETag) {
		return errorf(http.StatusPreconditionFailed, "%s", msgPrecondition)
	}
	status := http.StatusOK
	switch kind {
	case "create":
		if it.exists {
			return errorf(http.StatusConflict, "%s", msgConflict)
		}
		status, it.body = http.StatusCreated, op.ResourceBody
	case "upsert":
		if !it.exists {
			status = http.StatusCreated
		}
		it.body = op.ResourceBody
	case "replace":
		it.body = op.ResourceBody
	case "delete":
		status, it.body = http.StatusNoContent, nil
	case "patch":
		spec, aerr := parsePatch(op.ResourceBody)
		if aerr != nil {
			return aerr
		}
		doc, aerr := patched(it.body, id, spec)
		if aerr != nil {
			return aerr
		}
		it.body = doc
	}
	if kind != "read" {
		it.written = true
		it.exists = kind != "delete"
	}
	r.results[i].StatusCode = status
	r.bodyAt[i] = it.body
	return nil
}

// commit writes each written item's final state as one engine batch. It
// returns the items written by item id, or the error and the index in
// r.order of the item that failed (-1: not one item's).
func (r *batchRun) commit(ic *itemCtx) (map[string]engine.Item, int, *apiError) {
	b := r.p.NewBatch()
	var which []int // engine operation -> index in r.order
	for k, it := range r.order {
		if !it.written {
			continue
		}
		switch {
		case it.exists && it.baseExists:
			b.Replace(it.body, engine.IfMatch(it.base.ETag))
		case it.exists:
			b.Create(it.body)
		case it.baseExists:
			b.Delete(it.id, engine.IfMatch(it.base.ETag))
		default:
			continue // created and deleted within the batch
		}
		which = append(which, k)
	}
	final := map[string]engine.Item{}
	if len(which) == 0 {
		r.q.noteRead()
		return final, -1, nil
	}
	items, err := ic.c.ExecuteBatch(r.q.r.Context(), b)
	if err != nil {
		var be *engine.BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(which) {
			return nil, which[be.Index], fromEngine(be.Err)
		}
		return nil, -1, fromEngine(err)
	}
	for j, k := range which {
		if j < len(items) && r.order[k].exists {
			final[r.order[k].id] = items[j]
		}
	}
	r.q.noteWrite()
	return final, -1, nil
}

// lastOp is the last operation that touched r.order[k].
func (r *batchRun) lastOp(k int) int {
	last := 0
	for i, it := range r.itemOf {
		if it == r.order[k] {
			last = i
		}
	}
	return last
}

// fill sets the results' etags and bodies once the batch committed.
func (r *batchRun) fill(ic *itemCtx, ops []batchOp, final map[string]engine.Item) {
	minimal := r.q.minimal()
	for i := range r.results {
		r.results[i].RequestCharge = 1
		it := r.itemOf[i]
		read := strings.EqualFold(ops[i].OperationType, "read")
		switch {
		case r.bodyAt[i] == nil:
		case read && !it.written:
			r.results[i].ETag = it.base.ETag
			r.results[i].ResourceBody = ic.render(it.base)
		default:
			f, ok := final[it.id]
			if !ok {
				f = engine.Item{TS: r.q.s.clock().Unix(), PartitionKey: r.p.Key()}
			}
			r.results[i].ETag = f.ETag
			if read || !minimal {
				r.results[i].ResourceBody = ic.renderAs(r.bodyAt[i], f, it.id)
			}
		}
	}
}

// renderAs renders doc with the _ts and _etag of f and every other system
// property.
func (ic *itemCtx) renderAs(doc []byte, f engine.Item, id string) []byte {
	v, err := decodeJSON(doc)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return ic.withSystem(doc, f.PartitionKey, id)
	}
	for _, p := range systemProps {
		delete(m, p)
	}
	m["_ts"] = f.TS
	if f.ETag != "" {
		m["_etag"] = f.ETag
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ic.withSystem(doc, f.PartitionKey, id)
	}
	return ic.withSystem(b, f.PartitionKey, id)
}

// batchFailed answers 207: operation i failed with e, and every other one
// was not done (424).
func (q *request) batchFailed(results []batchResult, i int, e *apiError) *apiError {
	for j := range results {
		results[j] = batchResult{StatusCode: http.StatusFailedDependency, RequestCharge: 1}
	}
	results[i] = batchResult{StatusCode: e.status, SubStatusCode: e.substatus, RequestCharge: 1}
	q.noteRead()
	return q.replyJSON(http.StatusMultiStatus, results)
}
