package query

import "slices"

// Run executes b over docs by brute force, the reference the engine's
// indexed execution must agree with exactly: keep the docs that Match, sort
// them by OrderKey with CompareOrder (ties and unordered queries by the
// "id" property, ascending), Project, then apply Window to what is emitted (a COUNT query
// returns its one CountResult). docs is not modified.
func (b *Bound) Run(docs []Value) []Value { return b.RunKeyed(docs, nil) }

// RunKeyed is Run with the tie-breaking keys given: keys[i] orders docs[i]
// among docs whose ORDER BY values tie (and orders unordered queries), in
// place of its "id" (a container with a partition key breaks ties by its
// item keys: key value, then id). keys nil: the ids.
func (b *Bound) RunKeyed(docs []Value, keys []string) []Value {
	type hit struct {
		doc Value
		id  string
		key Value
	}
	var hits []hit
	var n int64
	for i, d := range docs {
		if !b.Match(d) {
			continue
		}
		if b.IsCount() {
			if b.CountItem(d) {
				n++
			}
			continue
		}
		id := d.Get("id").AsString()
		if keys != nil {
			id = keys[i]
		}
		hits = append(hits, hit{doc: d, id: id, key: b.OrderKey(d)})
	}
	if b.IsCount() {
		return []Value{b.CountResult(n)}
	}
	_, desc, _ := b.OrderBy()
	slices.SortStableFunc(hits, func(x, y hit) int { return CompareOrder(x.key, x.id, y.key, y.id, desc) })
	skip, limit := b.Window()
	var out []Value
	for _, h := range hits {
		if limit >= 0 && int64(len(out)) >= limit {
			break
		}
		v, ok := b.Project(h.doc)
		if !ok {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, v)
	}
	return out
}
