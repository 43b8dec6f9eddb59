package crashloop

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ebbdb/ebb/engine"
)

// worker writes its own ids one request at a time (single writes and
// transactional batches, conditional or not), now and then a shared id
// that the container's other workers write too, and reads its ids back.
type worker struct {
	ch    *child
	n     int
	c     *engine.Container
	rng   *rand.Rand
	ids   []string
	etags map[string]string // own ids the worker believes live: id -> etag
}

func (wk *worker) run(ctx context.Context) {
	for k := range idsPerWork {
		wk.ids = append(wk.ids, ownID(wk.n, k))
	}
	wk.ch.pause.RLock()
	for _, id := range wk.ids {
		wk.refresh(ctx, id)
	}
	wk.ch.pause.RUnlock()
	for n := 0; ; n++ {
		wk.ch.pause.RLock()
		wk.request(ctx, fmt.Sprintf("r%d.w%d.%d", wk.ch.round, wk.n, n))
		wk.ch.pause.RUnlock()
	}
}

// request runs one request of the worker as tag, with the reads that
// follow it.
func (wk *worker) request(ctx context.Context, tag string) {
	if wk.rng.IntN(5) == 0 {
		wk.shared(ctx, tag)
		return
	}
	var ops []wop
	if wk.rng.IntN(8) == 0 { // a transactional batch of 2 to 4 items
		for j, k := range wk.rng.Perm(len(wk.ids))[:2+wk.rng.IntN(3)] {
			ops = append(ops, wk.pick(wk.ids[k], fmt.Sprintf("%s.%d", tag, j)))
		}
	} else {
		ops = append(ops, wk.pick(wk.ids[wk.rng.IntN(len(wk.ids))], tag+".0"))
	}
	items, reason := wk.ch.write(ctx, wk.c, tag, ops, wk.etags)
	if reason != "" {
		// Something expired (or the worker's belief is wrong, which
		// the checker will say): look again.
		for _, o := range ops {
			wk.refresh(ctx, o.id)
		}
		return
	}
	for i, o := range ops {
		if o.kind == "delete" {
			delete(wk.etags, o.id)
		} else {
			wk.etags[o.id] = items[i].ETag
		}
	}
	if wk.rng.IntN(4) == 0 { // read your writes, through seals and compactions
		for _, o := range ops {
			wk.refresh(ctx, o.id)
		}
	}
	if wk.rng.IntN(4) == 0 { // and any other id, expired or not
		wk.refresh(ctx, wk.ids[wk.rng.IntN(len(wk.ids))])
	}
}

// refresh reads an own id and updates what the worker believes of it.
func (wk *worker) refresh(ctx context.Context, id string) {
	if it, ok := wk.ch.read(ctx, wk.c, id); ok {
		wk.etags[id] = it.ETag
	} else {
		delete(wk.etags, id)
	}
}

// pick chooses a write of own id, as tag w.
func (wk *worker) pick(id, w string) wop {
	o := wop{id: id, w: w}
	if _, live := wk.etags[id]; !live {
		o.kind = []string{"create", "create", "upsert"}[wk.rng.IntN(3)]
		return o
	}
	switch x := wk.rng.IntN(20); {
	case x < 7:
		o.kind = "upsert"
	case x < 11:
		o.kind, o.ifMatch = "replace", true
	case x < 13:
		o.kind = "replace"
	case x < 15:
		o.kind, o.ifMatch = "upsert", true
	case x < 18:
		o.kind, o.w = "delete", "-"
	default:
		o.kind, o.w, o.ifMatch = "delete", "-", true
	}
	return o
}

// shared writes one shared id of the worker's container, unconditionally.
func (wk *worker) shared(ctx context.Context, tag string) {
	o := wop{id: sharedID(wk.rng.IntN(sharedIDs)), w: tag + ".0"}
	switch x := wk.rng.IntN(10); {
	case x < 5:
		o.kind = "upsert"
	case x < 7:
		o.kind = "create"
	case x < 8:
		o.kind = "replace"
	default:
		o.kind, o.w = "delete", "-"
	}
	wk.ch.write(ctx, wk.c, tag, []wop{o}, nil)
}
