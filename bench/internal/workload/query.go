package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// QueryResult is the outcome of the query workload.
type QueryResult struct {
	Config QueryConfig `json:"config"`
	Stores []QueryRun  `json:"stores"`
	// Skipped names the stores of the run that have no secondary indexes.
	Skipped []string `json:"skipped,omitempty"`
}

// QueryRun is one store's run of the query workload.
type QueryRun struct {
	Store          string  `json:"store"`
	FillSeconds    float64 `json:"fill_s"`
	FillDocsPerSec float64 `json:"fill_docs_per_sec"`
	// ExpiredDuringFill counts the short documents that expired before the
	// fill ended (its expiry estimate was short): they expire early, the
	// rest a few seconds after the fill.
	ExpiredDuringFill int `json:"expired_during_fill"`
	// WaitSeconds is the time from the end of the fill until the queries
	// started: until every short document had expired, and Settle more.
	WaitSeconds float64     `json:"wait_s"`
	Queries     []QueryStat `json:"queries"`
	Storm       QueryStorm  `json:"storm"`
	// Texts says how the store was asked each query; Plans is ebb's
	// Explain of each.
	Texts map[string]string `json:"texts"`
	Plans map[string]string `json:"plans,omitempty"`
}

// QueryStat digests the runs of one query on one store.
type QueryStat struct {
	Query   string          `json:"query"`
	Title   string          `json:"title"`
	Runs    int             `json:"runs"`
	Latency measure.Summary `json:"latency"` // query and decode of every document
	// MeanRows is the mean number of documents returned (or the mean
	// count); MeanExpected the mean the harness expected.
	MeanRows     float64 `json:"mean_rows"`
	MeanExpected float64 `json:"mean_expected"`
	// ExpiredReturned counts documents returned (or counted) that had
	// expired before the query started: it must be 0.
	ExpiredReturned int64 `json:"expired_returned"`
	// FirstExpired describes the first expired document returned, if any.
	FirstExpired string `json:"first_expired,omitempty"`
	// Wrong counts runs whose result was not exactly the expected one.
	Wrong int `json:"wrong"`
}

// Name implements Result.
func (*QueryResult) Name() string { return "query" }

// qkind is one query of the workload and how its parameters vary.
type qkind struct {
	name  string // short, for JSON
	title string // for the table
	next  func(r *rand.Rand) store.Query
}

// queryProps are the properties every query store indexes.
var queryProps = []string{"user", "n", "cat"}

// kinds are the workload's queries over set; storm aims their parameters
// at the storm's documents (and leaves out the count of an expired
// category, which the storm does not touch).
func (c QueryConfig) kinds(set *qset, storm bool) []qkind {
	w := int64(c.width())
	rangeLo := func(r *rand.Rand) int64 { return r.Int64N(max(int64(set.n)-w, 0) + 1) }
	if storm {
		rangeLo = func(r *rand.Rand) int64 {
			return int64(set.n) - w/2 + r.Int64N(max(int64(len(set.docs)-set.n), 1))
		}
	}
	liveCat := func(r *rand.Rand) string { return qCats[r.IntN(qLiveCats)] }
	ks := []qkind{
		{"equality", "equality: user = @u", func(r *rand.Rand) store.Query {
			return store.Query{Kind: store.QueryEqual, Prop: "user", Value: userName(r.IntN(set.users))}
		}},
		{"range", fmt.Sprintf("range: @lo <= n < @lo+%d", w), func(r *rand.Rand) store.Query {
			lo := rangeLo(r)
			return store.Query{Kind: store.QueryRange, Prop: "n", Lo: lo, Hi: lo + w}
		}},
		{"top", fmt.Sprintf("ORDER BY n DESC, TOP %d", c.TopK), func(*rand.Rand) store.Query {
			return store.Query{Kind: store.QueryTop, Prop: "n", K: c.TopK}
		}},
		{"count_expired", "COUNT: cat = @c, all expired", func(r *rand.Rand) store.Query {
			return store.Query{Kind: store.QueryCount, Prop: "cat", Value: qCats[qLiveCats+r.IntN(qGoneCats)]}
		}},
		{"count_live", "COUNT: cat = @c, 55% live", func(r *rand.Rand) store.Query {
			return store.Query{Kind: store.QueryCount, Prop: "cat", Value: liveCat(r)}
		}},
		{"tenth", "10% of the items: cat = @c", func(r *rand.Rand) store.Query {
			return store.Query{Kind: store.QueryEqual, Prop: "cat", Value: liveCat(r)}
		}},
	}
	if storm {
		ks = slices.DeleteFunc(ks, func(k qkind) bool { return k.name == "count_expired" })
	}
	return ks
}

// RunQuery runs the query workload on each store of the run that has
// secondary indexes (ebb and BuntDB), one after the other.
func RunQuery(ctx context.Context, cfg *Config) (*QueryResult, error) {
	res := &QueryResult{Config: cfg.Query}
	if c := cfg.Query; c.N < max(c.PerUser, 1) || c.Batch < 1 || c.DocSize < 1 {
		return nil, fmt.Errorf("query: %d documents in batches of %d: need at least %d (one user's), in batches of 1 or more", c.N, c.Batch, c.PerUser)
	}
	for _, name := range cfg.Stores {
		if !store.CanQuery(name) {
			res.Skipped = append(res.Skipped, name)
			continue
		}
		run, err := queryOne(ctx, cfg, name)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", name, err)
		}
		res.Stores = append(res.Stores, run)
	}
	if len(res.Skipped) > 0 {
		cfg.logf("query: %v skipped: no secondary indexes\n", res.Skipped)
	}
	return res, nil
}

func queryOne(ctx context.Context, cfg *Config, name string) (QueryRun, error) {
	c := cfg.Query
	run := QueryRun{Store: name, Texts: map[string]string{}}
	dir, err := cfg.storeDir("query", name)
	if err != nil {
		return run, err
	}
	defer cfg.cleanup(dir)
	s, err := store.OpenQuery(name, dir, cfg.Store, queryProps)
	if err != nil {
		return run, err
	}
	defer s.Close()
	set := newQset(c, c.StormN)

	// The fill: the short documents of a batch expire at the second after
	// the estimated end of the fill plus Margin. The estimate is the time
	// left at the rate so far, times 1.5 so that a store slowing down as it
	// grows still ends its fill first; the first 10 batches, too few to
	// time, assume 50,000 documents a second. (A short document that expires
	// during the fill is counted in ExpiredDuringFill; its store then
	// spends part of the fill deleting it.)
	start := time.Now()
	shortTTL := func(now time.Time, done int) int32 {
		left := time.Duration(float64(c.N-done) / 50000 * float64(time.Second))
		if done >= 10*c.Batch {
			left = time.Duration(1.5 * float64(now.Sub(start)) * float64(c.N-done) / float64(done))
		}
		return int32(max(now.Add(left+c.Margin).Unix()+1-now.Unix(), 1))
	}
	took, err := c.write(ctx, s, set, 0, c.N, shortTTL, cfg.bar(int64(c.N), "query "+name+" (fill)"))
	if err != nil {
		return run, fmt.Errorf("fill: %w", err)
	}
	fillEnd := time.Now()
	run.FillSeconds, run.FillDocsPerSec = took.Seconds(), float64(c.N)/took.Seconds()
	var last int64
	for i := range c.N {
		if d := set.docs[i]; d.short {
			last = max(last, d.exp)
			if d.exp <= fillEnd.Unix() {
				run.ExpiredDuringFill++
			}
		}
	}
	until := time.Unix(last, 0).Add(c.Settle)
	cfg.logf("query %s: %d documents in %.1f s; waiting %.1f s for the short ones to expire\n",
		name, c.N, took.Seconds(), time.Until(until).Seconds())
	if err := sleepUntil(ctx, until); err != nil {
		return run, err
	}
	if h, ok := s.(store.Housekeeper); ok {
		if err := settle(ctx, h, time.Until(until.Add(c.MaxSettle))); err != nil {
			return run, err
		}
	}
	run.WaitSeconds = time.Since(fillEnd).Seconds()

	// The queries, each in turn, with the same parameters for every store.
	// Their expected results hold until the long ttl runs out (an hour).
	qStart := time.Now()
	want := set.expect(qStart.Unix())
	for k, kind := range c.kinds(set, false) {
		example := kind.next(rand.New(rand.NewPCG(uint64(k), 1)))
		run.Texts[kind.name] = s.Describe(example)
		if e, ok := s.(store.Explainer); ok {
			plan, err := e.Explain(example)
			if err != nil {
				return run, fmt.Errorf("explain %s: %w", kind.name, err)
			}
			if run.Plans == nil {
				run.Plans = map[string]string{}
			}
			run.Plans[kind.name] = plan
		}
		stat, err := c.measure(ctx, s, set, kind, rand.New(rand.NewPCG(uint64(k), 42)), want)
		if err != nil {
			return run, fmt.Errorf("%s: %w", kind.name, err)
		}
		run.Queries = append(run.Queries, stat)
	}

	run.Storm, err = c.storm(ctx, cfg, s, set, run.FillDocsPerSec)
	if err != nil {
		return run, fmt.Errorf("storm: %w", err)
	}
	return run, nil
}

// write writes documents from..to-1 of set in batches of Batch, one commit
// each: short ones with the ttl shortTTL gives for the batch (called once
// per batch with the time and the documents written so far), the others
// with their own. It records each document's latest expiry.
func (c QueryConfig) write(ctx context.Context, s store.QueryStore, set *qset, from, to int,
	shortTTL func(now time.Time, done int) int32, b *bar) (time.Duration, error) {
	defer b.done()
	start := time.Now()
	items := make([]store.Item, 0, c.Batch)
	ttls := make([]int32, 0, c.Batch)
	for lo := from; lo < to; lo += c.Batch {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		hi := min(lo+c.Batch, to)
		short := shortTTL(time.Now(), lo-from)
		items, ttls = items[:0], ttls[:0]
		for i := lo; i < hi; i++ {
			ttl := set.docs[i].ttl
			if set.docs[i].short {
				ttl = short
			}
			items = append(items, set.item(i, ttl))
			ttls = append(ttls, ttl)
		}
		if err := s.Put(ctx, items); err != nil {
			return 0, fmt.Errorf("documents %d..%d: %w", lo, hi-1, err)
		}
		done := time.Now().Unix()
		for k, ttl := range ttls {
			if ttl > 0 {
				set.docs[lo+k].exp = done + int64(ttl)
			}
		}
		set.written = hi
		b.add(hi - lo)
	}
	return time.Since(start), nil
}

// measure runs one query at least MinRuns times and for at least MinTime
// (at most MaxRuns), each time with the next parameters, and checks every
// result against want.
func (c QueryConfig) measure(ctx context.Context, s store.QueryStore, set *qset, kind qkind, r *rand.Rand, want *qexpect) (QueryStat, error) {
	stat := QueryStat{Query: kind.name, Title: kind.title}
	lat := measure.NewHistogram()
	var rows, expected int
	start := time.Now()
	for stat.Runs < c.MaxRuns && (stat.Runs < c.MinRuns || time.Since(start) < c.MinTime) {
		q := kind.next(r)
		t0 := time.Now()
		docs, count, err := runQuery(ctx, s, q)
		lat.Record(time.Since(t0))
		if err != nil {
			return stat, err
		}
		v := set.check(q, docs, count, t0.Unix(), want)
		stat.Runs++
		rows += v.rows
		expected += want.count(q)
		stat.ExpiredReturned += int64(v.expired)
		if stat.FirstExpired == "" {
			stat.FirstExpired = v.example
		}
		if v.wrong {
			stat.Wrong++
		}
	}
	stat.Latency = lat.Summary()
	stat.MeanRows = float64(rows) / float64(max(stat.Runs, 1))
	stat.MeanExpected = float64(expected) / float64(max(stat.Runs, 1))
	return stat, nil
}

// settle waits until the store's expiry backlog stops changing: the same
// figure twice, 1.1 s apart (longer than BuntDB's sweep period), or for at
// most limit.
func settle(ctx context.Context, h store.Housekeeper, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	prev, err := h.Backlog(ctx)
	if err != nil {
		return fmt.Errorf("expiry backlog: %w", err)
	}
	for time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(1100*time.Millisecond)); err != nil {
			return err
		}
		n, err := h.Backlog(ctx)
		if err != nil {
			return fmt.Errorf("expiry backlog: %w", err)
		}
		if n == prev {
			return nil
		}
		prev = n
	}
	return nil
}

// sleepUntil waits until t or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}
