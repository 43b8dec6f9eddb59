package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/query"
)

// Query pages.
//
// A page holds at most x-ms-max-item-count rows (100 when absent; -1: as
// many as fit) and at most maxPageBytes of them. Its continuation is
// {"ebb":1,"skip":N,"fp":"..."}: the count of rows already returned and a
// fingerprint of the query, its parameters and its partition key. The next
// page runs the query again and skips N rows, so pages cost time linear in
// the rows before them, and when items are written between pages a row may
// be skipped or returned twice (rows come in a stable order: ORDER BY, else
// id order within a partition, else creation order across partitions).

const (
	defaultPageItems = 100
	maxPageBytes     = 4 << 20
)

// Cosmos DB's refusals of cross-partition queries.
const (
	msgCrossPartitionDisabled = "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."
	msgGatewayCannotServe     = "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message."
)

// continuation is a query page's continuation token.
type continuation struct {
	Ebb  int    `json:"ebb"`
	Skip int64  `json:"skip"`
	FP   string `json:"fp"`
}

// fingerprint identifies a query with its parameters and partition key.
func fingerprint(spec querySpec, pk string) string {
	h := fnv.New64a()
	h.Write([]byte(spec.Query))
	for _, p := range spec.Parameters {
		h.Write([]byte{0})
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write(p.Value)
	}
	h.Write([]byte{1})
	h.Write([]byte(pk))
	return strconv.FormatUint(h.Sum64(), 16)
}

// parseContinuation reads x-ms-continuation for the query fp; "" is the
// first page.
func parseContinuation(tok, fp string) (int64, *apiError) {
	if tok == "" {
		return 0, nil
	}
	var c continuation
	if err := json.Unmarshal([]byte(tok), &c); err != nil || c.Ebb != 1 || c.Skip < 0 {
		return 0, errorf(http.StatusBadRequest, "the continuation token %q is not one this server returned", shorten(tok))
	}
	if c.FP != fp {
		return 0, errorf(http.StatusBadRequest, "the continuation token %q belongs to another query, parameters or partition key", shorten(tok))
	}
	return c.Skip, nil
}

// maxItemCount reads x-ms-max-item-count.
func maxItemCount(v string) (int, *apiError) {
	if v == "" {
		return defaultPageItems, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -1 || n == 0 {
		return 0, errorf(http.StatusBadRequest, "x-ms-max-item-count %q is not a positive integer or -1", shorten(v))
	}
	if n == -1 {
		return int(^uint(0) >> 1), nil
	}
	return n, nil
}

// queryItems answers a query of items: POST .../docs.
func (q *request) queryItems() *apiError {
	spec, aerr := q.readQuery()
	if aerr != nil {
		return aerr
	}
	return q.runItemQuery(spec, false)
}

// readFeed answers GET .../docs: every item, in pages.
func (q *request) readFeed() *apiError {
	return q.runItemQuery(querySpec{Query: "SELECT * FROM root"}, true)
}

// runItemQuery runs spec over the container's items, in the partition the
// header names, the one the WHERE clause pins, or across partitions where
// a gateway can serve it.
func (q *request) runItemQuery(spec querySpec, readFeed bool) *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	bound, err := spec.bind()
	if err != nil {
		return fromEngine(err)
	}
	pageMax, aerr := maxItemCount(q.r.Header.Get("x-ms-max-item-count"))
	if aerr != nil {
		return aerr
	}
	k, hasKey, aerr := q.partitionKey()
	if aerr != nil {
		return aerr
	}
	if isTrue(q.r.Header.Get("x-ms-cosmos-is-query-plan-request")) {
		return q.queryPlan(bound)
	}
	rangeID := q.r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
	if rangeID != "" && rangeID != "0" {
		return errorf(http.StatusBadRequest, "partition key range %q does not exist: ebb serve has one range, \"0\"", shorten(rangeID))
	}
	pkPath := ic.c.Properties().PartitionKeyPath
	cross := false
	if !hasKey && pkPath != "" {
		if pinned, ok := pinnedKey(bound, pkPath); ok {
			k, hasKey = pinned, true
		} else {
			cross = true
		}
	}
	if cross && !readFeed {
		if !isTrue(q.r.Header.Get("x-ms-documentdb-query-enablecrosspartition")) && rangeID == "" {
			return errorf(http.StatusBadRequest, "%s", msgCrossPartitionDisabled)
		}
		_, _, ordered := bound.OrderBy()
		skip, limit := bound.Window()
		if ordered || bound.IsCount() || skip > 0 || limit >= 0 {
			return &apiError{status: http.StatusBadRequest, substatus: subCrossPartition, msg: msgGatewayCannotServe}
		}
	}
	pkText := ""
	if hasKey {
		pkText = k.String()
	}
	fp := fingerprint(spec, pkText)
	skip, aerr := parseContinuation(q.r.Header.Get("x-ms-continuation"), fp)
	if aerr != nil {
		return aerr
	}
	ctx := q.r.Context()
	var rows iter.Seq2[engine.Item, error]
	if hasKey {
		rows = ic.c.Partition(k).Query(ctx, spec.Query, spec.engineParams()...)
	} else {
		rows = ic.c.Query(ctx, spec.Query, spec.engineParams()...)
	}
	if cross {
		rows, err = inCreationOrder(ctx, ic.c, rows)
		if err != nil {
			return fromEngine(err)
		}
	}
	whole := bound.SelectsAll()
	var docs []json.RawMessage
	var n, bytes int64
	more := false
	for it, err := range rows {
		if err != nil {
			return fromEngine(err)
		}
		n++
		if n <= skip {
			continue
		}
		if len(docs) >= pageMax || bytes >= maxPageBytes {
			more = true
			break
		}
		body := it.Body
		if whole {
			body = ic.withSystem(body, it.PartitionKey, it.ID)
		}
		docs = append(docs, body)
		bytes += int64(len(body))
	}
	if cross && len(docs) == pageMax {
		// Across partitions a page that is full always has a
		// continuation, as the service's gateway answers (the next page
		// may be empty).
		more = true
	}
	h := q.w.Header()
	if more {
		tok, _ := json.Marshal(continuation{Ebb: 1, Skip: skip + int64(len(docs)), FP: fp})
		h.Set("x-ms-continuation", string(tok))
	}
	if docs == nil {
		docs = []json.RawMessage{}
	}
	h.Set("x-ms-item-count", strconv.Itoa(len(docs)))
	h.Set("x-ms-documentdb-query-metrics", queryMetrics(len(docs), bytes))
	if isTrue(q.r.Header.Get("x-ms-cosmos-populateindexmetrics")) {
		h.Set("x-ms-cosmos-index-utilization", base64.StdEncoding.EncodeToString([]byte(`{"UtilizedSingleIndexes":[],"PotentialSingleIndexes":[],"UtilizedCompositeIndexes":[],"PotentialCompositeIndexes":[]}`)))
	}
	q.noteRead()
	return q.replyDocuments(ic, docs)
}

// replyDocuments answers 200 with a page of documents of ic's container,
// in the service's shape: {"_rid": ..., "Documents": [...], "_count": n}.
func (q *request) replyDocuments(ic *itemCtx, docs []json.RawMessage) *apiError {
	return q.replyJSON(http.StatusOK, map[string]any{"_rid": collRID(ic.dbRID, ic.collRID), "Documents": docs, "_count": len(docs)})
}

// queryMetrics is the x-ms-documentdb-query-metrics header of a page.
func queryMetrics(count int, size int64) string {
	return fmt.Sprintf("totalExecutionTimeInMs=0.10;queryCompileTimeInMs=0.01;queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.05;indexLookupTimeInMs=0.01;documentLoadTimeInMs=0.01;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=%d;retrievedDocumentSize=%d;outputDocumentCount=%d;outputDocumentSize=%d;writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00", count, size, count, size)
}

// pinnedKey finds the one partition key value a query's WHERE pins with an
// equality on the key path (at the top level of the WHERE or of an AND).
func pinnedKey(b *query.Bound, pkPath string) (engine.PartitionKey, bool) {
	segs := strings.Split(strings.TrimPrefix(pkPath, "/"), "/")
	term := query.TermPath(segs...)
	p := b.Plan(func(string) bool { return true })
	acc := p.Access
	if acc == nil {
		return engine.PartitionKey{}, false
	}
	cands := []*query.Access{acc}
	if acc.Kind == query.And {
		cands = acc.Children
	}
	for _, a := range cands {
		if a.Kind != query.Eq || a.Path != term || len(a.Keys) != 1 {
			continue
		}
		v, ok := query.KeyValue(a.Keys[0])
		if !ok {
			continue
		}
		switch v.Kind() {
		case query.String:
			return engine.StringKey(v.AsString()), true
		case query.Number:
			return engine.NumberKey(v.AsNumber()), true
		case query.Bool:
			return engine.BoolKey(v.AsBool()), true
		case query.Null:
			return engine.NullKey(), true
		}
	}
	return engine.PartitionKey{}, false
}

// inCreationOrder collects rows and orders them as the service's gateway
// returns a cross-partition query without ORDER BY: by when each item was
// last written (its position in the change feed).
func inCreationOrder(ctx context.Context, c *engine.Container, rows iter.Seq2[engine.Item, error]) (iter.Seq2[engine.Item, error], error) {
	var all []engine.Item
	for it, err := range rows {
		if err != nil {
			return nil, err
		}
		all = append(all, it)
	}
	type ident struct {
		pk engine.PartitionKey
		id string
	}
	lsn := make(map[ident]uint64, len(all))
	for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.LatestVersion}) {
		if err != nil {
			return nil, err
		}
		lsn[ident{ch.PartitionKey, ch.ID}] = ch.LSN
	}
	slices.SortStableFunc(all, func(a, b engine.Item) int {
		la, lb := lsn[ident{a.PartitionKey, a.ID}], lsn[ident{b.PartitionKey, b.ID}]
		switch {
		case la < lb:
			return -1
		case la > lb:
			return 1
		}
		return 0
	})
	return func(yield func(engine.Item, error) bool) {
		for _, it := range all {
			if !yield(it, nil) {
				return
			}
		}
	}, nil
}

// queryPlan answers a query plan request (x-ms-cosmos-is-query-plan-request,
// which the JavaScript, Python and .NET SDKs send before a cross-partition
// query): for a query a gateway serves across partitions, a plan with
// nothing for the client to do and the one range; for ORDER BY, aggregates,
// TOP, OFFSET or LIMIT, which would need a rewritten query per range, a 400
// that says to name the partition.
func (q *request) queryPlan(b *query.Bound) *apiError {
	_, _, ordered := b.OrderBy()
	skip, limit := b.Window()
	if ordered || b.IsCount() || skip > 0 || limit >= 0 {
		return errorf(http.StatusBadRequest, "ebb serve gives query plans only for queries without ORDER BY, aggregates, TOP, OFFSET or LIMIT; run this one in one partition (give the partition key)")
	}
	q.noteRead()
	return q.replyJSON(http.StatusOK, map[string]any{
		"partitionedQueryExecutionInfoVersion": 2,
		"queryInfo": map[string]any{
			"distinctType": "None", "top": nil, "offset": nil, "limit": nil,
			"orderBy": []any{}, "orderByExpressions": []any{}, "groupByExpressions": []any{},
			"groupByAliases": []any{}, "aggregates": []any{}, "groupByAliasToAggregateType": map[string]any{},
			"rewrittenQuery": "", "hasSelectValue": false, "dCountInfo": nil, "hasNonStreamingOrderBy": false,
		},
		"queryRanges": []any{map[string]any{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}},
	})
}
