package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// QueryStorm is the query workload's storm phase on one store: StormN
// documents expiring in the same second while the queries run without
// pause around it, every returned document checked against its expiry.
type QueryStorm struct {
	N int `json:"n"`
	// Expiry is the unix second at which the storm's documents expire.
	Expiry      int64   `json:"expiry_unix"`
	FillSeconds float64 `json:"fill_s"`
	// Queries run, and documents returned (plus counts) checked.
	Queries     int   `json:"queries"`
	RowsChecked int64 `json:"rows_checked"`
	// ExpiredReturned counts documents returned (or counted) after their
	// expiry: it must be 0. Wrong counts results with a document that is
	// not the harness's or does not match the query.
	ExpiredReturned int64  `json:"expired_returned"`
	FirstExpired    string `json:"first_expired,omitempty"`
	Wrong           int    `json:"wrong"`
	// Kinds digest the latencies of each query before the expiry second
	// and from it on.
	Kinds []QueryStormKind `json:"kinds"`
}

// QueryStormKind digests one query's latencies around the storm.
type QueryStormKind struct {
	Query  string          `json:"query"`
	Before measure.Summary `json:"before"`
	After  measure.Summary `json:"after"`
}

// kind returns the digest of the query named name, or a zero one.
func (st *QueryStorm) kind(name string) QueryStormKind {
	for _, k := range st.Kinds {
		if k.Query == name {
			return k
		}
	}
	return QueryStormKind{Query: name}
}

// storm writes the storm's documents so that they all expire at one
// second, a little after their writing ends (estimated from rate, the
// fill's documents a second), then runs the queries one after another from
// the end of the writing until StormAfter past that second.
func (c QueryConfig) storm(ctx context.Context, cfg *Config, s store.QueryStore, set *qset, rate float64) (QueryStorm, error) {
	st := QueryStorm{N: c.StormN}
	if c.StormN == 0 {
		return st, nil
	}
	est := time.Duration(3*float64(c.StormN)/rate*float64(time.Second)) + c.StormBefore + 500*time.Millisecond
	expiry := time.Unix(time.Now().Add(est).Unix()+1, 0)
	st.Expiry = expiry.Unix()
	overran := false
	ttl := func(now time.Time, _ int) int32 {
		t := expiry.Unix() - now.Unix()
		if t < 1 {
			overran, t = true, 1
		}
		return int32(t)
	}
	took, err := c.write(ctx, s, set, c.N, c.N+c.StormN, ttl, cfg.bar(int64(c.StormN), "query storm (fill)"))
	if err != nil {
		return st, err
	}
	if overran {
		return st, fmt.Errorf("writing the %d expiring documents took %v, past their expiry (estimated %v)", c.StormN, took, est)
	}
	st.FillSeconds = took.Seconds()

	end := expiry.Add(c.StormAfter)
	stop := cfg.timeBar(time.Until(end), "query storm (queries)")
	defer stop()
	kinds := c.kinds(set, true)
	before, after := make([]*measure.Histogram, len(kinds)), make([]*measure.Histogram, len(kinds))
	for k := range kinds {
		before[k], after[k] = measure.NewHistogram(), measure.NewHistogram()
	}
	r := rand.New(rand.NewPCG(7, 42))
	for k := 0; time.Now().Before(end); k = (k + 1) % len(kinds) {
		q := kinds[k].next(r)
		t0 := time.Now()
		docs, count, err := runQuery(ctx, s, q)
		d := time.Since(t0)
		if err != nil {
			return st, fmt.Errorf("%s: %w", s.Describe(q), err)
		}
		if t0.Before(expiry) {
			before[k].Record(d)
		} else {
			after[k].Record(d)
		}
		v := set.check(q, docs, count, t0.Unix(), nil)
		st.Queries++
		st.RowsChecked += int64(v.rows)
		st.ExpiredReturned += int64(v.expired)
		if st.FirstExpired == "" && v.example != "" {
			st.FirstExpired = fmt.Sprintf("%s (the query took %v)", v.example, d)
		}
		if v.wrong {
			st.Wrong++
		}
	}
	for k, kind := range kinds {
		st.Kinds = append(st.Kinds, QueryStormKind{Query: kind.name, Before: before[k].Summary(), After: after[k].Summary()})
	}
	return st, nil
}
