package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
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

// batch answers a transactional batch (POST .../docs with
// x-ms-cosmos-is-batch-request): every operation in one partition, all or
// nothing. Reads and patches are resolved first (a patch becomes a replace
// conditioned on the etag it read), then the writes commit as one engine
// batch. A read of an item written earlier in the batch answers that
// write's result. Two writes of one item in a batch are refused (400 for
// the second), a rule of the engine's batches. 200 with every result, or
// 207 with the failed operation's status and 424 for the others.
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
	ctx := q.r.Context()
	results := make([]batchResult, len(ops))
	b := p.NewBatch()
	var engineIdx []int // engine batch position -> operation index
	// written maps an id written earlier in the batch to its operation (-1:
	// deleted), so that a later read sees that write, as the service
	// applies operations in order.
	written := map[string]int{}
	readsAfter := map[int]int{} // read operation -> the write it reads
	for i, op := range ops {
		var opts []engine.WriteOption
		if op.IfMatch != "" && op.IfMatch != "*" {
			opts = append(opts, engine.IfMatch(op.IfMatch))
		}
		switch strings.ToLower(op.OperationType) {
		case "read":
			if j, ok := written[op.ID]; ok {
				if j < 0 {
					return q.batchFailed(results, i, errorf(http.StatusNotFound, "%s", msgNotFound))
				}
				readsAfter[i] = j
				results[i].StatusCode = http.StatusOK
				continue
			}
			it, err := p.Read(ctx, op.ID)
			if err != nil {
				return q.batchFailed(results, i, fromEngine(err))
			}
			results[i] = batchResult{StatusCode: http.StatusOK, ETag: it.ETag, ResourceBody: ic.render(it)}
			continue
		case "create":
			b.Create(op.ResourceBody)
			results[i].StatusCode = http.StatusCreated
		case "upsert":
			results[i].StatusCode = http.StatusCreated
			if id, ok := docID(op.ResourceBody); ok {
				if _, err := p.Read(ctx, id); err == nil {
					results[i].StatusCode = http.StatusOK
				}
			}
			b.Upsert(op.ResourceBody, opts...)
		case "replace":
			if id, ok := docID(op.ResourceBody); ok && op.ID != "" && id != op.ID {
				return q.batchFailed(results, i, errorf(http.StatusBadRequest, "the id in the body, %q, differs from the operation's id, %q", shorten(id), shorten(op.ID)))
			}
			b.Replace(op.ResourceBody, opts...)
			results[i].StatusCode = http.StatusOK
		case "delete":
			b.Delete(op.ID, opts...)
			results[i].StatusCode = http.StatusNoContent
		case "patch":
			var spec patchSpec
			if err := json.Unmarshal(op.ResourceBody, &spec); err != nil {
				return q.batchFailed(results, i, errorf(http.StatusBadRequest, "the patch is not valid JSON: %v", err))
			}
			if aerr := spec.check(); aerr != nil {
				return q.batchFailed(results, i, aerr)
			}
			doc, etag, aerr := patchOnce(q, p, op.ID, spec, op.IfMatch)
			if aerr != nil {
				return q.batchFailed(results, i, aerr)
			}
			b.Replace(doc, engine.IfMatch(etag))
			results[i].StatusCode = http.StatusOK
		default:
			return errorf(http.StatusBadRequest, "batch operation %d has operationType %q: expected Create, Upsert, Replace, Delete, Read or Patch", i, shorten(op.OperationType))
		}
		engineIdx = append(engineIdx, i)
		switch id, ok := docID(op.ResourceBody); {
		case strings.EqualFold(op.OperationType, "delete"):
			written[op.ID] = -1
		case strings.EqualFold(op.OperationType, "patch"):
			written[op.ID] = i
		case ok:
			written[id] = i
		}
	}
	if len(engineIdx) > 0 {
		items, err := ic.c.ExecuteBatch(ctx, b)
		if err != nil {
			var be *engine.BatchError
			if errors.As(err, &be) && be.Index >= 0 && be.Index < len(engineIdx) {
				return q.batchFailed(results, engineIdx[be.Index], fromEngine(be.Err))
			}
			return fromEngine(err)
		}
		minimal := q.minimal()
		for j, i := range engineIdx {
			if j >= len(items) {
				break
			}
			results[i].ETag = items[j].ETag
			if results[i].StatusCode != http.StatusNoContent && !minimal {
				results[i].ResourceBody = ic.render(items[j])
			}
		}
		for i, j := range readsAfter {
			k := slices.Index(engineIdx, j)
			if k >= 0 && k < len(items) {
				results[i].ETag = items[k].ETag
				results[i].ResourceBody = ic.render(items[k])
			}
		}
		q.noteWrite()
	} else {
		q.noteRead()
	}
	for i := range results {
		results[i].RequestCharge = 1
	}
	return q.replyJSON(http.StatusOK, results)
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

var _ = bytes.TrimSpace
