package engine_test

// Partition keys in TestModel (model_test.go): container c1 is created with
// partition key path /pk, and each model id maps to a (partition key, id)
// pair of the engine: i00..i09 are ids i00..i09 with no value at /pk
// (None), i10..i19 the same ids under key 5, i20..i29 under key "a". So
// three items share each engine id in c1, and the model's id order is the
// engine's order (key, then id: None < numbers < strings). The runner
// calls c1 through Container.Partition, or, for writes, sometimes through
// the Container, which takes the key from the document; batches of c1 are
// generated within one partition.

import (
	"fmt"
	"strconv"

	"github.com/ebbdb/ebb/engine"
)

// keyedContainer is the index of the model's container with a partition key.
const keyedContainer = 1

// modelKeyPath is its partition key path.
const modelKeyPath = "/pk"

func modelKeyed(k int) bool { return k == keyedContainer }

// modelKeys are the partition keys of model ids i00.., i10.., i20...
var modelKeys = [3]engine.PartitionKey{engine.NoneKey(), engine.NumberKey(5), engine.StringKey("a")}

// modelIdent is the engine's (partition key, id) of model id in container k.
func modelIdent(k int, id string) (engine.PartitionKey, string) {
	n, err := strconv.Atoi(id[1:])
	if !modelKeyed(k) || err != nil || n < 0 || n >= modelIDs {
		return engine.NoneKey(), id // an id outside the model's space ("never-written")
	}
	return modelKeys[n/10], itemID(n % 10)
}

// modelIDOf is the model id of an item the engine returned from container
// k, or an error when its partition key is none of the model's.
func modelIDOf(k int, it engine.Item) (string, error) {
	if !modelKeyed(k) || it.ID == "" {
		return it.ID, nil
	}
	n, err := strconv.Atoi(it.ID[1:])
	for p, key := range modelKeys {
		if key == it.PartitionKey && err == nil && n >= 0 && n < 10 {
			return itemID(p*10 + n), nil
		}
	}
	return "", fmt.Errorf("item %q has partition key %v, which the model never wrote", it.ID, it.PartitionKey)
}

// fromEngine is it with its ID made the model id.
func (r *modelRun) fromEngine(k int, it engine.Item) (engine.Item, error) {
	id, err := modelIDOf(k, it)
	if err != nil {
		return it, classErr("partition key: wrong", "%v", err)
	}
	it.ID = id
	return it, nil
}

// keyedDoc is modelDoc for container k: in c1 the document's id is the
// engine id and /pk holds the partition key (absent for None).
func keyedDoc(k int, id string, ttl int32, val int, sys bool) ([]byte, map[string]any) {
	if !modelKeyed(k) {
		return modelDoc(id, ttl, val, sys)
	}
	pk, eid := modelIdent(k, id)
	return modelDocWith(eid, ttl, val, sys, func(m map[string]any) {
		if !pk.IsNone() {
			m["pk"] = pk.Value()
		}
	})
}

// part is the partition of container c that holds model id.
func part(k int, c *engine.Container, id string) (*engine.Partition, string) {
	pk, eid := modelIdent(k, id)
	return c.Partition(pk), eid
}

// readItem reads model id from container k, with the item's ID made the
// model id.
func (r *modelRun) readItem(k int, c *engine.Container, id string) (engine.Item, error) {
	if !modelKeyed(k) {
		return c.Read(r.ctx, id)
	}
	p, eid := part(k, c, id)
	it, err := p.Read(r.ctx, eid)
	if err != nil {
		return it, err
	}
	if it.PartitionKey != p.Key() {
		return it, classErr("partition key: wrong", "read %q in partition %v returned key %v", eid, p.Key(), it.PartitionKey)
	}
	return r.fromEngine(k, it)
}

// writeItem runs one create, upsert, replace (doc) or delete of model id
// in container k; viaContainer writes c1's documents through the Container.
func (r *modelRun) writeItem(k int, c *engine.Container, kind opKind, id string, doc []byte, viaContainer bool, opts ...engine.WriteOption) (engine.Item, error) {
	var (
		it  engine.Item
		err error
	)
	p, eid := part(k, c, id)
	switch {
	case kind == opDelete && modelKeyed(k):
		return it, p.Delete(r.ctx, eid, opts...)
	case kind == opDelete:
		return it, c.Delete(r.ctx, id, opts...)
	case modelKeyed(k) && !viaContainer:
		switch kind {
		case opCreate:
			it, err = p.Create(r.ctx, doc, opts...)
		case opUpsert:
			it, err = p.Upsert(r.ctx, doc, opts...)
		default:
			it, err = p.Replace(r.ctx, doc, opts...)
		}
	default:
		switch kind {
		case opCreate:
			it, err = c.Create(r.ctx, doc, opts...)
		case opUpsert:
			it, err = c.Upsert(r.ctx, doc, opts...)
		default:
			it, err = c.Replace(r.ctx, doc, opts...)
		}
	}
	if err != nil {
		return it, err
	}
	return r.fromEngine(k, it)
}

// newBatch is a batch for container k whose operations are on model ids
// in the partition of model id first.
func newBatch(k int, c *engine.Container, first string) *engine.Batch {
	if !modelKeyed(k) {
		return new(engine.Batch)
	}
	p, _ := part(k, c, first)
	return p.NewBatch()
}

// dedup is ids without repeats, in order.
func dedup(ids []int) []int {
	seen := map[int]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
