package engine

import (
	"container/heap"

	"github.com/ebbdb/ebb/engine/query"
)

// pendingDocs holds the fetched documents of an ordered walk that the index
// order does not place (no scalar at the ORDER BY path, or written since
// the walk), smallest in result order first, until the walk reaches their
// place. Pushing and popping cost O(log n).
type pendingDocs struct {
	docs []keyedDoc
	desc bool
}

func (p *pendingDocs) Len() int { return len(p.docs) }
func (p *pendingDocs) Less(i, j int) bool {
	a, b := p.docs[i], p.docs[j]
	return query.CompareOrder(a.key, a.d.rec.ID, b.key, b.d.rec.ID, p.desc) < 0
}
func (p *pendingDocs) Swap(i, j int) { p.docs[i], p.docs[j] = p.docs[j], p.docs[i] }
func (p *pendingDocs) Push(x any)    { p.docs = append(p.docs, x.(keyedDoc)) }
func (p *pendingDocs) Pop() any {
	x := p.docs[len(p.docs)-1]
	p.docs = p.docs[:len(p.docs)-1]
	return x
}

// reset empties p, keeping its storage.
func (p *pendingDocs) reset() {
	clear(p.docs)
	p.docs = p.docs[:0]
}

func (p *pendingDocs) push(d keyedDoc) { heap.Push(p, d) }
func (p *pendingDocs) pop() keyedDoc   { return heap.Pop(p).(keyedDoc) }

// before reports whether the first pending document sorts before (key, id).
func (p *pendingDocs) before(key query.Value, id string) bool {
	d := p.docs[0]
	return query.CompareOrder(d.key, d.d.rec.ID, key, id, p.desc) < 0
}
