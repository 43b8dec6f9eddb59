package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// The query workload's data set, as the harness knows it. Document number
// i (id gen.Key("q-", i)) has:
//   - user "user-%05d" of i mod users, users = N/PerUser, so that every
//     user holds PerUser documents (N a multiple of PerUser);
//   - n, a permutation of 0..N-1 (unique; a range of width W holds W
//     documents); the storm's documents N.. have n = i, above every other;
//   - short (about half, by a hash of i): a ttl that makes it expire a few
//     seconds after the fill, before the queries; the others have a ttl of
//     LongTTL or none;
//   - cat: short documents fall, one in five, into "gone-0".."gone-4"
//     (2% of the documents each, all expired); every other document into
//     "cat-1".."cat-9" (10% each, about 55% of them live).

const qPrefix = "q-"

// qCats names the categories: the live ones first, then the expired ones.
var qCats = []string{"cat-1", "cat-2", "cat-3", "cat-4", "cat-5", "cat-6", "cat-7", "cat-8", "cat-9",
	"gone-0", "gone-1", "gone-2", "gone-3", "gone-4"}

const (
	qLiveCats = 9 // qCats[:9] hold live documents, qCats[9:] only expired ones
	qGoneCats = 5
)

// qmeta is one document as the harness knows it.
type qmeta struct {
	n     int64
	user  int32
	cat   int8
	short bool
	// ttl of a document that is not short: LongTTL or 0.
	ttl int32
	// exp is the latest unix second at which the document expires in the
	// store: its ttl plus the second its commit returned, since the store
	// stamps the write no later than that. 0: never expires. A document
	// returned by a query that started at or after second exp had
	// certainly expired.
	exp int64
}

// qset is the data set of one store's run.
type qset struct {
	n       int // base documents; docs[n:] are the storm's
	users   int
	docs    []qmeta
	written int // docs[:written] are in the store
	gen     *gen.QueryDocs
}

// splitmix64 is a fixed hash of i, so that the data set is the same for
// every store and every run.
func splitmix64(i uint64) uint64 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// newQset lays out n base documents and storm more.
func newQset(c QueryConfig, storm int) *qset {
	s := &qset{n: c.N, users: max(1, c.N/max(c.PerUser, 1)), docs: make([]qmeta, c.N+storm), gen: gen.NewQueryDocs(c.DocSize)}
	// n = a*i mod N, a coprime with N: a permutation that scatters n.
	a := uint64(1_000_003)
	for c.N > 1 && gcd(a, uint64(c.N)) != 1 {
		a += 2
	}
	for i := range s.docs {
		h := splitmix64(uint64(i))
		d := qmeta{user: int32(i % s.users), cat: int8((h >> 24) % qLiveCats)}
		switch {
		case i >= c.N:
			d.n, d.short = int64(i), true
		default:
			d.n = int64((a * uint64(i)) % uint64(c.N))
			d.short = h&1 == 1
			if d.short && (h>>8)%5 == 0 {
				d.cat = int8(qLiveCats + (h>>16)%qGoneCats)
			}
			if !d.short && (h>>1)&1 == 1 {
				d.ttl = c.LongTTL
			}
		}
		s.docs[i] = d
	}
	return s
}

func userName(u int) string { return fmt.Sprintf("user-%05d", u) }

// item is document i written with ttl (0: none).
func (s *qset) item(i int, ttl int32) store.Item {
	d := &s.docs[i]
	f := gen.QueryFields{ID: gen.Key(qPrefix, uint64(i)), TTL: ttl, User: userName(int(d.user)), N: d.n,
		Cat: qCats[d.cat], Body: uint64(i)}
	return store.Item{Key: f.ID, Value: s.gen.Doc(f), TTL: ttl}
}

// expired says whether document i had certainly expired at unix second t.
func (s *qset) expired(i int, t int64) bool {
	e := s.docs[i].exp
	return e != 0 && t >= e
}

// number is the document number of an id, or -1 for an id not written.
func (s *qset) number(id string) int {
	if !strings.HasPrefix(id, qPrefix) {
		return -1
	}
	i, err := strconv.Atoi(id[len(qPrefix):])
	if err != nil || i < 0 || i >= s.written {
		return -1
	}
	return i
}

// qdoc is a document of the query workload as an application decodes it.
type qdoc struct {
	ID       string `json:"id"`
	TTL      int32  `json:"ttl"`
	User     string `json:"user"`
	N        int64  `json:"n"`
	Cat      string `json:"cat"`
	Type     string `json:"type"`
	TenantID string `json:"tenantId"`
	Status   string `json:"status"`
	Customer struct {
		Name     string `json:"name"`
		Email    string `json:"email"`
		Verified bool   `json:"verified"`
		Address  struct {
			Street string `json:"street"`
			City   string `json:"city"`
			Zip    string `json:"zip"`
		} `json:"address"`
	} `json:"customer"`
	Lines []struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	} `json:"lines"`
	Total     float64  `json:"total"`
	Currency  string   `json:"currency"`
	Device    string   `json:"device"`
	CreatedAt string   `json:"createdAt"`
	Tags      []string `json:"tags"`
	Notes     string   `json:"notes"`
}

// runQuery runs q and decodes every document it returns with
// encoding/json, as an application would: this is what is timed. For a
// count it returns the count and no documents.
func runQuery(ctx context.Context, s store.QueryStore, q store.Query) (docs []qdoc, count int, err error) {
	count, err = s.Query(ctx, q, func(doc []byte) error {
		docs = append(docs, qdoc{})
		if err := json.Unmarshal(doc, &docs[len(docs)-1]); err != nil {
			return fmt.Errorf("decode %.60q: %w", doc, err)
		}
		return nil
	})
	return docs, count, err
}

// matches says whether a returned document satisfies q's predicate and is
// the harness's document of that id.
func (s *qset) matches(q store.Query, i int, d *qdoc) bool {
	m := &s.docs[i]
	if d.N != m.n || d.User != userName(int(m.user)) || d.Cat != qCats[m.cat] {
		return false
	}
	switch q.Kind {
	case store.QueryEqual:
		switch q.Prop {
		case "user":
			return d.User == q.Value
		case "cat":
			return d.Cat == q.Value
		}
		return false
	case store.QueryRange:
		return d.N >= q.Lo && d.N < q.Hi
	}
	return true
}

// verdict is what the harness found in one result.
type verdict struct {
	rows    int // documents returned, or the count
	expired int // documents that had certainly expired when the query started
	wrong   bool
	// example describes the first expired document, for the report.
	example string
}

// check judges the documents (or count) a query returned when started at
// unix second t against the data set; want, when not nil, is the exact
// expected result.
func (s *qset) check(q store.Query, docs []qdoc, count int, t int64, want *qexpect) verdict {
	v := verdict{rows: len(docs)}
	if q.Kind == store.QueryCount {
		v.rows = count
		var possible int
		if want != nil {
			possible = want.count(q)
		} else {
			possible = s.countLive(q.Value, t)
		}
		v.expired = max(0, count-possible)
		if v.expired > 0 {
			v.example = fmt.Sprintf("count of %s = %q was %d, at most %d live in second %d", q.Prop, q.Value, count, possible, t)
		}
		v.wrong = v.expired > 0 || (want != nil && count != want.count(q))
		return v
	}
	for k := range docs {
		i := s.number(docs[k].ID)
		if i < 0 || !s.matches(q, i, &docs[k]) {
			v.wrong = true
			continue
		}
		if s.expired(i, t) {
			if v.expired == 0 {
				v.example = fmt.Sprintf("%s returned %s (n %d), expired from unix second %d on, to a query started in second %d",
					q.Prop, docs[k].ID, docs[k].N, s.docs[i].exp, t)
			}
			v.expired++
		}
	}
	if q.Kind == store.QueryTop {
		top := make([]int64, len(docs))
		for k := range docs {
			top[k] = docs[k].N
		}
		v.wrong = v.wrong || (want != nil && !slices.Equal(top, want.top(q.K))) ||
			!slices.IsSortedFunc(top, func(a, b int64) int { return int(b - a) })
	} else if want != nil && len(docs) != want.count(q) {
		v.wrong = true
	}
	return v
}

// countLive counts the written documents of category cat not certainly
// expired at unix second t: no store may count more.
func (s *qset) countLive(cat string, t int64) int {
	n := 0
	for i := range s.written {
		if qCats[s.docs[i].cat] == cat && !s.expired(i, t) {
			n++
		}
	}
	return n
}

// qexpect is the exact result of every query at one instant, when no
// document expires near it.
type qexpect struct {
	byUser []int
	byCat  map[string]int
	liveN  []int64 // ascending
}

// expect computes the live documents at unix second t.
func (s *qset) expect(t int64) *qexpect {
	e := &qexpect{byUser: make([]int, s.users), byCat: map[string]int{}}
	for i := range s.written {
		if s.expired(i, t) {
			continue
		}
		d := &s.docs[i]
		e.byUser[d.user]++
		e.byCat[qCats[d.cat]]++
		e.liveN = append(e.liveN, d.n)
	}
	slices.Sort(e.liveN)
	return e
}

// count is the expected number of rows of q.
func (e *qexpect) count(q store.Query) int {
	switch {
	case q.Kind == store.QueryRange:
		lo := sort.Search(len(e.liveN), func(k int) bool { return e.liveN[k] >= q.Lo })
		hi := sort.Search(len(e.liveN), func(k int) bool { return e.liveN[k] >= q.Hi })
		return hi - lo
	case q.Kind == store.QueryTop:
		return min(q.K, len(e.liveN))
	case q.Prop == "user":
		var u int
		if _, err := fmt.Sscanf(q.Value, "user-%d", &u); err != nil || u < 0 || u >= len(e.byUser) {
			return 0
		}
		return e.byUser[u]
	case q.Prop == "cat":
		return e.byCat[q.Value]
	}
	return -1
}

// top is the expected n of a top-k query, highest first.
func (e *qexpect) top(k int) []int64 {
	out := make([]int64, 0, k)
	for j := len(e.liveN) - 1; j >= 0 && len(out) < k; j-- {
		out = append(out, e.liveN[j])
	}
	return out
}
