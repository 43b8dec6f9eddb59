package crashloop

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// The shape of the workload, shared by the child that runs it and the
// checker that judges it.

// Containers. Workers of even number write their own ids in "c", odd in
// "c2", so that seals (which freeze every container at one journal
// position) and compactions of one container cross the other's writes.
// Every worker of a container also writes its shared ids, concurrently.
// The clock controller writes its probe in "clock" (TTL off), and the
// checker its own probe there after each restart.
const (
	contClock  = "clock"
	probeID    = "probe" // the child's clock probe
	checkID    = "check" // the checker's clock probe
	idsPerWork = 24      // own ids per worker
	sharedIDs  = 16      // shared ids per container
)

var dataContainers = []string{"c", "c2"}

// allContainers is every container the workload uses, in creation order.
var allContainers = []string{"c", "c2", contClock}

// defaultTTLOf is the DefaultTTL a container is created with.
func defaultTTLOf(cont string) *int32 {
	if cont == contClock {
		return nil
	}
	return engine.TTL(3600)
}

// The DefaultTTLs a policy change picks from: off, on without a default,
// short (a mass expiry), an hour, a day.
var policyChoices = []*int32{nil, engine.TTL(-1), engine.TTL(30), engine.TTL(600), engine.TTL(3600), engine.TTL(86400)}

func ownID(worker, k int) string { return fmt.Sprintf("w%d-%03d", worker, k) }

func sharedID(k int) string { return fmt.Sprintf("s-%02d", k) }

// ownerOf returns the worker that owns id, or -1 for a shared or probe id.
// Only the owner writes an own id, one write at a time, so the checker
// knows its exact state before each write and read.
func ownerOf(id string) int {
	rest, ok := strings.CutPrefix(id, "w")
	if !ok {
		return -1
	}
	n, _, ok := strings.Cut(rest, "-")
	if !ok {
		return -1
	}
	w, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return w
}

// containerOfWorker is the container of worker w's own ids.
func containerOfWorker(w int) string { return dataContainers[w%len(dataContainers)] }

// idBelongs reports whether id may appear in container cont at all.
func idBelongs(cont, id string) bool {
	if cont == contClock {
		return id == probeID || id == checkID
	}
	if w := ownerOf(id); w >= 0 {
		return containerOfWorker(w) == cont
	}
	return strings.HasPrefix(id, "s-")
}

// engineOptions are the options of every Open, child and checker alike:
// small thresholds, so that a short round seals, rolls journal files and
// compacts in the background many times.
func engineOptions(clock func() time.Time) *engine.Options {
	return &engine.Options{
		Clock:              clock,
		SealThreshold:      8 << 10,
		JournalSegmentSize: 16 << 10,
		BlockSize:          1 << 10,
		CompactionInterval: 20 * time.Millisecond,
	}
}
