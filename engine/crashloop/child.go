package crashloop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// ChildMain runs the child side of a round: it opens the database named by
// the environment Run gives it, runs the workload and reports every step on
// stdout (see protocol.go) until it is killed. It returns an exit code only
// when something went wrong; the caller passes it to os.Exit. A program
// that Run starts as its child calls ChildMain when IsChild reports true.
func ChildMain() int {
	ch := &child{}
	ch.run()
	return 3
}

// child is the state of the child process.
type child struct {
	wall      atomic.Int64 // the wall clock that Options.Clock reads
	confirmed atomic.Int64 // the last step the engine is known to have observed
	db        *engine.DB
	cs        map[string]*engine.Container
	round     int
	workers   int
	// pause is held for reading by each worker request (its lines
	// included) and Compact call, and for writing by the controller's hold
	// step, which so runs with nothing else writing.
	pause sync.RWMutex
}

// emit writes one line to stdout with a single write.
func (ch *child) emit(format string, args ...any) {
	os.Stdout.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
}

// fail reports what went wrong and exits.
func (ch *child) fail(format string, args ...any) {
	ch.emit("fail "+format, args...)
	os.Exit(3)
}

func envInt(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

func (ch *child) run() {
	// Never outlive the parent: a killed parent must not leave writers.
	ppid := os.Getppid()
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			if os.Getppid() != ppid {
				os.Exit(5)
			}
		}
	}()
	ctx := context.Background()
	dir := os.Getenv(envDir)
	wall, tru := envInt(envWall), envInt(envTrue)
	ch.round = int(envInt(envRound))
	seed := uint64(envInt(envSeed))
	workers := int(envInt(envWorkers))
	faults := os.Getenv(envFaults) == "1"
	if dir == "" || wall <= 0 || workers <= 0 {
		ch.fail("bad environment: %s=%q %s=%d %s=%d", envDir, dir, envWall, wall, envWorkers, workers)
	}
	ch.wall.Store(wall)
	ch.workers = workers
	db, err := engine.Open(dir, engineOptions(func() time.Time { return time.Unix(ch.wall.Load(), 0) }))
	if err != nil {
		ch.fail("open: %v", err)
	}
	ch.db = db
	ch.cs = make(map[string]*engine.Container)
	for _, name := range allContainers {
		c, err := db.Container(name)
		if errors.Is(err, engine.ErrNotFound) {
			c, err = db.CreateContainer(ctx, engine.ContainerProperties{ID: name, DefaultTTL: defaultTTLOf(name)})
			if err == nil {
				ch.emit("created %s", name)
			}
		}
		if err != nil {
			ch.fail("container %s: %v", name, err)
		}
		ch.cs[name] = c
	}
	ctl := &controller{ch: ch, rng: rand.New(rand.NewPCG(seed, 999)), faults: faults, wall: wall, tru: tru}
	if faults {
		ctl.holdAt = 2 + ctl.rng.IntN(30)
	}
	ctl.step(ctx, 0)
	ch.emit("ready")
	for w := range workers {
		wk := &worker{ch: ch, n: w, c: ch.cs[containerOfWorker(w)], rng: rand.New(rand.NewPCG(seed, uint64(w))), etags: map[string]string{}}
		go wk.run(ctx)
	}
	go ch.compactions(ctx, rand.New(rand.NewPCG(seed, 1000)))
	go ch.scans(ctx)
	go ctl.run(ctx)
	time.Sleep(60 * time.Second) // the parent kills us long before
	ch.fail("not killed after 60s")
}

// compactions calls Compact on a random container now and then.
func (ch *child) compactions(ctx context.Context, rng *rand.Rand) {
	for {
		time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
		name := allContainers[rng.IntN(len(allContainers))]
		ch.pause.RLock()
		ch.emit("compacting %s", name)
		if err := ch.cs[name].Compact(ctx); err != nil {
			ch.fail("compact %s: %v", name, err)
		}
		ch.emit("compacted %s", name)
		ch.pause.RUnlock()
	}
}

// scans reads every container whole, over and over: every body must be
// exactly the document of the write it names, in id order, in the right
// container.
func (ch *child) scans(ctx context.Context) {
	for {
		for _, name := range allContainers {
			prev := ""
			for it, err := range ch.cs[name].Items(ctx) {
				if err != nil {
					ch.fail("scan %s: %v", name, err)
				}
				if _, err := writeOf(it); err != nil {
					ch.fail("scan %s: %v", name, err)
				}
				if !idBelongs(name, it.ID) {
					ch.fail("scan: item %q in container %s", it.ID, name)
				}
				if prev != "" && it.ID <= prev {
					ch.fail("scan %s: %q after %q: not in id order", name, it.ID, prev)
				}
				prev = it.ID
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// write runs ops (one write, or a batch of several) on c, announcing it
// with a start line and answering with ack or nack. It returns the items
// written and the nack reason, if refused.
func (ch *child) write(ctx context.Context, c *engine.Container, tag string, ops []wop, etags map[string]string) ([]engine.Item, string) {
	var line strings.Builder
	fmt.Fprintf(&line, "start %s %s", tag, c.ID())
	opts := make([][]engine.WriteOption, len(ops))
	for i, o := range ops {
		k := o.kind
		if o.ifMatch {
			k += "!"
			opts[i] = []engine.WriteOption{engine.IfMatch(etags[o.id])}
		}
		fmt.Fprintf(&line, " %s %s %s", k, o.id, o.w)
	}
	ch.emit("%s", line.String())

	var items []engine.Item
	var err error
	if len(ops) == 1 {
		o := ops[0]
		var it engine.Item
		switch o.kind {
		case "create":
			it, err = c.Create(ctx, docFor(o.id, o.w), opts[0]...)
		case "upsert":
			it, err = c.Upsert(ctx, docFor(o.id, o.w), opts[0]...)
		case "replace":
			it, err = c.Replace(ctx, docFor(o.id, o.w), opts[0]...)
		case "delete":
			err = c.Delete(ctx, o.id, opts[0]...)
		}
		items = []engine.Item{it}
	} else {
		var b engine.Batch
		for i, o := range ops {
			switch o.kind {
			case "create":
				b.Create(docFor(o.id, o.w), opts[i]...)
			case "upsert":
				b.Upsert(docFor(o.id, o.w), opts[i]...)
			case "replace":
				b.Replace(docFor(o.id, o.w), opts[i]...)
			case "delete":
				b.Delete(o.id, opts[i]...)
			}
		}
		items, err = c.ExecuteBatch(ctx, &b)
	}
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrNotFound):
		ch.emit("nack %s %s", tag, reasonNotFound)
		return nil, reasonNotFound
	case errors.Is(err, engine.ErrConflict):
		ch.emit("nack %s %s", tag, reasonConflict)
		return nil, reasonConflict
	case errors.Is(err, engine.ErrPreconditionFailed):
		ch.emit("nack %s %s", tag, reasonPrecondition)
		return nil, reasonPrecondition
	default:
		ch.fail("%s: %v", tag, err)
	}
	line.Reset()
	line.WriteString("ack " + tag)
	for i, o := range ops {
		if o.kind == "delete" {
			line.WriteString(" - 0")
			continue
		}
		w, err := writeOf(items[i])
		if err != nil {
			ch.fail("%s: returned item: %v", tag, err)
		}
		if w != o.w || items[i].ID != o.id {
			ch.fail("%s: returned item %q of write %s, want %q of %s", tag, items[i].ID, w, o.id, o.w)
		}
		fmt.Fprintf(&line, " %s %d", items[i].ETag, items[i].TS)
	}
	ch.emit("%s", line.String())
	return items, ""
}

// read reads id in c and reports what it found with a read line; the
// found item's body must be intact.
func (ch *child) read(ctx context.Context, c *engine.Container, id string) (engine.Item, bool) {
	k := ch.confirmed.Load()
	it, err := c.Read(ctx, id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		ch.emit("read %d %s %s -", k, c.ID(), id)
		return engine.Item{}, false
	case err != nil:
		ch.fail("read %s %s: %v", c.ID(), id, err)
	}
	w, err := writeOf(it)
	if err != nil {
		ch.fail("read %s: %v", c.ID(), err)
	}
	ch.emit("read %d %s %s %s %d %s", k, c.ID(), id, w, it.TS, it.ETag)
	return it, true
}
