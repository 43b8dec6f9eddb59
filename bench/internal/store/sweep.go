package store

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// TTL emulation for stores without native TTL (bbolt, Pebble), done the way
// an application would do it:
//   - the value is stored as an 8-byte big-endian expiry (unix seconds, 0 =
//     never) followed by the document, and Get treats a stamp <= now as a
//     miss (the item is invisible at expiry, as in the native stores);
//   - every write of an expiring item also writes an index key
//     expiry(8 bytes) + key, so that a sweep finds the expired items by a
//     range scan instead of reading every value;
//   - every SweepInterval a sweep deletes the expired items and their index
//     keys, in chunks of sweepChunk per commit;
//   - at most every CompactInterval, after sweeps deleted something, the
//     store compacts (what that means is per store).

const sweepChunk = 10000

// stamp prepends the expiry to v.
func stamp(exp int64, v []byte) []byte {
	out := make([]byte, 8+len(v))
	binary.BigEndian.PutUint64(out, uint64(exp))
	copy(out[8:], v)
	return out
}

// unstamp splits a stored value; ok is false when it is expired at now.
func unstamp(stored []byte, now int64) (exp int64, v []byte, ok bool) {
	if len(stored) < 8 {
		return 0, nil, false
	}
	exp = int64(binary.BigEndian.Uint64(stored))
	return exp, stored[8:], exp == 0 || exp > now
}

// indexKey is prefix + expiry + key.
func indexKey(prefix []byte, exp int64, key string) []byte {
	out := make([]byte, 0, len(prefix)+8+len(key))
	out = append(out, prefix...)
	out = binary.BigEndian.AppendUint64(out, uint64(exp))
	return append(out, key...)
}

// sweeper runs a store's sweep and compaction in the background.
type sweeper struct {
	interval, compactEvery time.Duration
	// sweep deletes every item expired at now and returns how many.
	sweep func(now int64) (int, error)
	// compact reclaims the space of what sweeps deleted.
	compact func() error

	stop chan struct{}
	done sync.WaitGroup

	sweeps, deleted, sweepNanos atomic.Int64
	compactions, compactNanos   atomic.Int64
	errors                      atomic.Int64
	pending                     int64 // deleted since the last compaction; owned by run
	lastCompact                 time.Time
	stopOnce                    sync.Once
}

func (s *sweeper) start() {
	s.stop = make(chan struct{})
	s.lastCompact = time.Now()
	s.done.Add(1)
	go s.run()
}

func (s *sweeper) run() {
	defer s.done.Done()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		start := time.Now()
		n, err := s.sweep(start.Unix())
		s.sweepNanos.Add(int64(time.Since(start)))
		s.sweeps.Add(1)
		s.deleted.Add(int64(n))
		s.pending += int64(n)
		if err != nil {
			s.errors.Add(1)
		}
		if s.pending > 0 && s.compact != nil && time.Since(s.lastCompact) >= s.compactEvery {
			select {
			case <-s.stop:
				return
			default:
			}
			start := time.Now()
			if err := s.compact(); err != nil {
				s.errors.Add(1)
			}
			s.compactNanos.Add(int64(time.Since(start)))
			s.compactions.Add(1)
			s.pending = 0
			s.lastCompact = time.Now()
		}
	}
}

// halt stops the background work and waits for it.
func (s *sweeper) halt() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.done.Wait()
}

func (s *sweeper) report() map[string]float64 {
	return map[string]float64{
		"sweeps":          float64(s.sweeps.Load()),
		"swept_keys":      float64(s.deleted.Load()),
		"sweep_seconds":   time.Duration(s.sweepNanos.Load()).Seconds(),
		"compactions":     float64(s.compactions.Load()),
		"compact_seconds": time.Duration(s.compactNanos.Load()).Seconds(),
		"errors":          float64(s.errors.Load()),
	}
}
