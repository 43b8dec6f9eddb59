package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/query"
)

// patchSpec is a patch request body: Cosmos DB's partial document update.
type patchSpec struct {
	// Condition is a filter ("FROM c WHERE c.n > 1") the item must match.
	Condition  string    `json:"condition"`
	Operations []patchOp `json:"operations"`
}

type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
	From  string          `json:"from"`
}

// maxPatchOps is Cosmos DB's limit of operations in one patch.
const maxPatchOps = 10

// patchRetries bounds the read-apply-replace rounds a patch (or a batch)
// makes when a concurrent write changes the item between its read and its
// write. Every round that loses does so to a write that won, so a round is
// lost at most once per concurrent writer; the bound only stops a livelock.
const patchRetries = 100

// systemProps are dropped from a document before it is written back.
var systemProps = []string{"_rid", "_self", "_etag", "_ts", "_attachments"}

// parsePatch reads a patch body: {"condition": ..., "operations": [...]}
// or, as the JavaScript SDK sends it, the bare array of operations.
func parsePatch(b []byte) (patchSpec, *apiError) {
	var spec patchSpec
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return spec, errorf(http.StatusBadRequest, "the patch body is empty; {\"operations\":[...]} is expected")
	}
	var err error
	if t[0] == '[' {
		err = json.Unmarshal(t, &spec.Operations)
	} else {
		err = json.Unmarshal(t, &spec)
	}
	if err != nil {
		return spec, errorf(http.StatusBadRequest, "the patch is not {\"condition\":...,\"operations\":[...]} or an array of operations: %v", err)
	}
	return spec, spec.check()
}

func (s patchSpec) check() *apiError {
	if len(s.Operations) == 0 {
		return errorf(http.StatusBadRequest, "the patch has no operations")
	}
	if len(s.Operations) > maxPatchOps {
		return errorf(http.StatusBadRequest, "the patch has %d operations, more than the limit of %d", len(s.Operations), maxPatchOps)
	}
	return nil
}

// patched applies spec to the stored body cur (of item id) and returns the
// document to write back.
func patched(cur []byte, id string, spec patchSpec) ([]byte, *apiError) {
	if spec.Condition != "" {
		ok, aerr := matchCondition(cur, spec.Condition)
		if aerr != nil {
			return nil, aerr
		}
		if !ok {
			return nil, errorf(http.StatusPreconditionFailed, "%s (the patch condition %q is false for item %q)", msgPrecondition, shorten(spec.Condition), shorten(id))
		}
	}
	doc, err := decodeJSON(cur)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "decode item %q: %v", id, err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errorf(http.StatusInternalServerError, "item %q is not an object", id)
	}
	for _, p := range systemProps {
		delete(root, p)
	}
	var node any = root
	for i, op := range spec.Operations {
		node, err = applyOp(node, op)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "patch operation %d (%s %s): %v", i, shorten(op.Op), shorten(op.Path), err)
		}
	}
	root = node.(map[string]any)
	if got, _ := root["id"].(string); got != id {
		return nil, errorf(http.StatusBadRequest, "patch operations may not change the id of item %q", shorten(id))
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "encode the patched item: %v", err)
	}
	return out, nil
}

// matchCondition evaluates a patch condition ("FROM c WHERE ...") on doc.
func matchCondition(doc []byte, cond string) (bool, *apiError) {
	src := strings.TrimSpace(cond)
	if !strings.HasPrefix(strings.ToUpper(src), "SELECT") {
		src = "SELECT * " + src
	}
	pq, err := query.Parse(src)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "the patch condition %q: %s", shorten(cond), clean(err))
	}
	b, err := pq.Bind(map[string]query.Value{})
	if err != nil {
		return false, errorf(http.StatusBadRequest, "the patch condition %q: %s", shorten(cond), clean(err))
	}
	v, err := query.Decode(doc)
	if err != nil {
		return false, errorf(http.StatusInternalServerError, "decode the item: %v", err)
	}
	return b.Match(v), nil
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// splitPointer splits a JSON pointer ("/a/b~1c/0") into its unescaped
// segments.
func splitPointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' || p == "/" {
		return nil, fmt.Errorf("path %q is not a JSON pointer to a property (\"/name\")", shorten(p))
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, nil
}

var errPathMissing = errors.New("the path does not exist")

// applyOp applies one operation to the document root.
func applyOp(root any, op patchOp) (any, error) {
	segs, err := splitPointer(op.Path)
	if err != nil {
		return nil, err
	}
	var val any
	needValue := op.Op != "remove" && op.Op != "move"
	if needValue {
		if len(bytes.TrimSpace(op.Value)) == 0 {
			return nil, errors.New("the operation has no value")
		}
		if val, err = decodeJSON(op.Value); err != nil {
			return nil, fmt.Errorf("the value is not JSON: %v", err)
		}
	}
	switch op.Op {
	case "add":
		return at(root, segs, func(parent any, key string) (any, error) { return insert(parent, key, val, true) })
	case "set":
		return at(root, segs, func(parent any, key string) (any, error) { return insert(parent, key, val, false) })
	case "replace":
		return at(root, segs, func(parent any, key string) (any, error) {
			if _, err := get(parent, key); err != nil {
				return nil, err
			}
			return insert(parent, key, val, false)
		})
	case "remove":
		return at(root, segs, remove)
	case "incr":
		inc, ok := val.(json.Number)
		if !ok {
			return nil, errors.New("incr needs a number value")
		}
		return at(root, segs, func(parent any, key string) (any, error) {
			cur, err := get(parent, key)
			if errors.Is(err, errPathMissing) {
				if _, isMap := parent.(map[string]any); isMap {
					return insert(parent, key, inc, false)
				}
			}
			if err != nil {
				return nil, err
			}
			n, ok := cur.(json.Number)
			if !ok {
				return nil, errors.New("incr needs the value at the path to be a number")
			}
			return insert(parent, key, addNumbers(n, inc), false)
		})
	case "move":
		from, err := splitPointer(op.From)
		if err != nil {
			return nil, fmt.Errorf("from: %v", err)
		}
		var moved any
		root, err = at(root, from, func(parent any, key string) (any, error) {
			v, err := get(parent, key)
			if err != nil {
				return nil, err
			}
			moved = v
			return remove(parent, key)
		})
		if err != nil {
			return nil, fmt.Errorf("from %s: %v", shorten(op.From), err)
		}
		return at(root, segs, func(parent any, key string) (any, error) { return insert(parent, key, moved, false) })
	}
	return nil, fmt.Errorf("unknown operation %q (add, set, replace, remove, incr, move)", shorten(op.Op))
}

// at walks to the parent of the last segment and applies fn there,
// returning the new node (arrays may be reallocated).
func at(node any, segs []string, fn func(parent any, key string) (any, error)) (any, error) {
	if len(segs) == 1 {
		return fn(node, segs[0])
	}
	child, err := get(node, segs[0])
	if err != nil {
		return nil, err
	}
	nc, err := at(child, segs[1:], fn)
	if err != nil {
		return nil, err
	}
	switch n := node.(type) {
	case map[string]any:
		n[segs[0]] = nc
	case []any:
		i, _ := strconv.Atoi(segs[0])
		n[i] = nc
	}
	return node, nil
}

func index(key string, n int, allowEnd bool) (int, error) {
	if key == "-" && allowEnd {
		return n, nil
	}
	i, err := strconv.Atoi(key)
	if err != nil || i < 0 || i > n || (i == n && !allowEnd) {
		return 0, fmt.Errorf("%w: %q is not an index of an array of %d elements", errPathMissing, shorten(key), n)
	}
	return i, nil
}

func get(node any, key string) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		v, ok := n[key]
		if !ok {
			return nil, fmt.Errorf("%w: no property %q", errPathMissing, shorten(key))
		}
		return v, nil
	case []any:
		i, err := index(key, len(n), false)
		if err != nil {
			return nil, err
		}
		return n[i], nil
	}
	return nil, fmt.Errorf("%w: %q is under a value that is not an object or array", errPathMissing, shorten(key))
}

// insert sets key in an object; in an array it inserts at the index
// (add) or replaces the element there (set, replace), "-" or the length
// appending.
func insert(node any, key string, v any, add bool) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		n[key] = v
		return n, nil
	case []any:
		i, err := index(key, len(n), true)
		if err != nil {
			return nil, err
		}
		if add || i == len(n) {
			n = append(n, nil)
			copy(n[i+1:], n[i:])
			n[i] = v
			return n, nil
		}
		n[i] = v
		return n, nil
	}
	return nil, fmt.Errorf("%w: %q is under a value that is not an object or array", errPathMissing, shorten(key))
}

func remove(node any, key string) (any, error) {
	if _, err := get(node, key); err != nil {
		return nil, err
	}
	switch n := node.(type) {
	case map[string]any:
		delete(n, key)
		return n, nil
	case []any:
		i, _ := strconv.Atoi(key)
		return append(n[:i], n[i+1:]...), nil
	}
	return node, nil
}

// addNumbers adds two JSON numbers, as integers when both are.
func addNumbers(a, b json.Number) json.Number {
	ai, aerr := a.Int64()
	bi, berr := b.Int64()
	if aerr == nil && berr == nil {
		s := ai + bi
		if (s > ai) == (bi > 0) || bi == 0 {
			return json.Number(strconv.FormatInt(s, 10))
		}
	}
	af, _ := a.Float64()
	bf, _ := b.Float64()
	return json.Number(strconv.FormatFloat(af+bf, 'g', -1, 64))
}

// patchOnce reads item id in p, applies spec and returns the document to
// write back with the etag it was computed from. ifMatch, when set, must
// be the item's etag.
func patchOnce(q *request, p *engine.Partition, id string, spec patchSpec, ifMatch string) ([]byte, string, *apiError) {
	it, err := p.Read(q.r.Context(), id)
	if err != nil {
		return nil, "", fromEngine(err)
	}
	if ifMatch != "" && ifMatch != "*" && ifMatch != it.ETag {
		return nil, "", errorf(http.StatusPreconditionFailed, "%s", msgPrecondition)
	}
	doc, aerr := patched(it.Body, id, spec)
	if aerr != nil {
		return nil, "", aerr
	}
	return doc, it.ETag, nil
}

// patchItem answers PATCH .../docs/{id}: read, apply, replace on the etag
// read, again when another write came in between.
func (q *request) patchItem() *apiError {
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	body, aerr := q.body()
	if aerr != nil {
		return aerr
	}
	spec, aerr := parsePatch(body)
	if aerr != nil {
		return aerr
	}
	p, aerr := q.pointScope(ic.c)
	if aerr != nil {
		return aerr
	}
	ifMatch := q.r.Header.Get("If-Match")
	for attempt := 0; ; attempt++ {
		doc, etag, aerr := patchOnce(q, p, q.rt.doc, spec, ifMatch)
		if aerr != nil {
			return aerr
		}
		it, err := p.Replace(q.r.Context(), doc, engine.IfMatch(etag))
		if errors.Is(err, engine.ErrPreconditionFailed) && (ifMatch == "" || ifMatch == "*") && attempt < patchRetries {
			continue // another write came in between: patch the new version
		}
		if err != nil {
			return fromEngine(err)
		}
		return q.replyItem(ic, http.StatusOK, it, true)
	}
}
