package crashloop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// controller moves the child's wall clock and changes DefaultTTLs. It works
// in steps: it announces step K's wall clock X, sets it, makes the engine
// observe it (by a probe write, whose _ts the checker compares with the now
// it expects, or by a read), and only then reports the step done. So the
// engine, which reads no other wall clock between the two steps, has its
// now after step K exactly its now after step K-1 moved on by X minus step
// K-1's wall clock when that is positive (time elapsed, to an injected
// clock), and a DefaultTTL change made between two steps happens at that
// now.
type controller struct {
	ch     *child
	rng    *rand.Rand
	faults bool
	wall   int64 // the wall clock of the current step
	tru    int64 // the true time: the wall clock without its fault
	offset int64 // the current fault: wall minus true time
	left   int   // steps until the fault is corrected
	holdAt int   // the step that is a hold (see hold); 0: none
}

// holdFor is how long a hold keeps the workers and Compact calls paused
// after its "held" line: the parent kills the child within it.
const holdFor = 100 * time.Millisecond

func (ctl *controller) run(ctx context.Context) {
	for k := 1; ; k++ {
		time.Sleep(time.Duration(2+ctl.rng.IntN(10)) * time.Millisecond)
		if k == ctl.holdAt {
			ctl.hold(ctx, k)
			continue
		}
		ctl.advance()
		ctl.step(ctx, k)
		if ctl.rng.IntN(12) == 0 {
			ctl.changePolicy(ctx, k)
		}
	}
}

// advance moves the true time on by 0 to 2 seconds and, with clock faults,
// sometimes sets the wall clock hours behind or ahead of it for a few steps
// (a fault that is then corrected), or leaps the true time on by hours (a
// machine resumed from suspend).
func (ctl *controller) advance() {
	ctl.tru += int64(ctl.rng.IntN(3))
	if ctl.faults {
		if ctl.left > 0 {
			ctl.left--
			if ctl.left == 0 {
				ctl.offset = 0
			}
		} else {
			switch x := ctl.rng.IntN(100); {
			case x < 3:
				ctl.offset, ctl.left = -3600*int64(1+ctl.rng.IntN(6)), 1+ctl.rng.IntN(5)
			case x < 4:
				ctl.offset, ctl.left = 600+int64(ctl.rng.IntN(2*3600)), 1+ctl.rng.IntN(4)
			case x < 6:
				ctl.tru += 3600 + int64(ctl.rng.IntN(2*3600))
			}
		}
	}
	ctl.wall = ctl.tru + ctl.offset
}

// step runs clock step k: announce, set, observe, confirm.
func (ctl *controller) step(ctx context.Context, k int) {
	ch := ctl.ch
	ch.emit("clock %d %d %d", k, ctl.wall, ctl.tru)
	ch.wall.Store(ctl.wall)
	c := ch.cs[contClock]
	if k == 0 || ctl.rng.IntN(3) == 0 {
		tag := fmt.Sprintf("r%d.k%d", ch.round, k)
		if _, reason := ch.write(ctx, c, tag, []wop{{kind: "upsert", id: probeID, w: tag}}, nil); reason != "" {
			ch.fail("%s: probe upsert refused: %s", tag, reason)
		}
	} else {
		ch.read(ctx, c, probeID)
	}
	ch.emit("clocked %d", k)
	ch.confirmed.Store(int64(k))
}

// hold runs clock step k with the workers and Compact calls paused. It
// sets the wall clock ahead of the true time by a fault of ten minutes to
// two hours (corrected a few steps later), makes the engine observe it by
// a read alone, reads every worker's own ids (the jump expired some of
// them: those answers rely on their expiry) and says "held k", then keeps
// everything paused for holdFor. A kill right after that line finds
// nothing written since the jump (the engine's background work aside), so
// only the engine's making those expiries durable before answering keeps
// them expired after the restart, whose wall clock is back near the true
// time.
func (ctl *controller) hold(ctx context.Context, k int) {
	ch := ctl.ch
	ch.pause.Lock()
	defer ch.pause.Unlock()
	ctl.tru += int64(ctl.rng.IntN(3))
	ctl.offset, ctl.left = 600+int64(ctl.rng.IntN(2*3600)), 1+ctl.rng.IntN(3)
	ctl.wall = ctl.tru + ctl.offset
	ch.emit("clock %d %d %d", k, ctl.wall, ctl.tru)
	ch.wall.Store(ctl.wall)
	ch.read(ctx, ch.cs[contClock], probeID)
	ch.emit("clocked %d", k)
	ch.confirmed.Store(int64(k))
	for w := range ch.workers {
		c := ch.cs[containerOfWorker(w)]
		for j := range idsPerWork {
			ch.read(ctx, c, ownID(w, j))
		}
	}
	ch.emit("held %d", k)
	time.Sleep(holdFor)
}

// changePolicy sets a random data container's DefaultTTL.
func (ctl *controller) changePolicy(ctx context.Context, k int) {
	ch := ctl.ch
	name := dataContainers[ctl.rng.IntN(len(dataContainers))]
	c := ch.cs[name]
	props := c.Properties()
	props.DefaultTTL = policyChoices[ctl.rng.IntN(len(policyChoices))]
	ch.emit("policy %d %s %s", k, name, ttlString(props.DefaultTTL))
	if err := c.SetProperties(ctx, props); err != nil {
		ch.fail("policy %d %s: %v", k, name, err)
	}
	ch.emit("policied %d %s", k, name)
}
