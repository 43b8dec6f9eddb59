package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// QueryFields are the properties of a query-workload document that its
// queries filter and sort on; the generator adds the rest.
type QueryFields struct {
	// ID is the document's id (and the key of the peers).
	ID string
	// TTL is the "ttl" property in seconds; 0 leaves it out.
	TTL int32
	// User is a string shared by a fixed number of documents (equality).
	User string
	// N is a number unique to the document (ranges, ORDER BY).
	N int64
	// Cat is a category string shared by a share of the documents.
	Cat string
	// Body picks one of the generator's bodies (mod its pool).
	Body uint64
}

// QueryDocs makes the documents of the query workload: JSON objects of an
// exact size shaped like an order (a customer object, order lines, a
// total, tags, free text), with the queried properties user, n and cat at
// the top level. It is read-only after NewQueryDocs, so safe for concurrent
// use.
type QueryDocs struct {
	size   int
	bodies []body
}

// QueryMinSize is the smallest size NewQueryDocs accepts: the queried
// properties with long values and the fixed fields fit in it.
const QueryMinSize = 640

// NewQueryDocs returns a generator of query documents of size bytes (at
// least QueryMinSize).
func NewQueryDocs(size int) *QueryDocs {
	size = max(size, QueryMinSize)
	g := &QueryDocs{size: size, bodies: make([]body, poolSize)}
	for i := range g.bodies {
		g.bodies[i] = makeOrderBody(uint64(i), size)
	}
	return g
}

// Size is the size of every document the generator makes.
func (g *QueryDocs) Size() int { return g.size }

func makeOrderBody(seed uint64, size int) body {
	r := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	first, last := pick(firstNames), pick(lastNames)
	f := fmt.Appendf(nil,
		`"type":"order","tenantId":"tenant-%03d","status":%q,`+
			`"customer":{"name":"%s %s","email":"%s.%s@example.com","verified":%t,`+
			`"address":{"street":"%d %s Street","city":%q,"zip":"%05d"}},`+
			`"lines":[{"sku":"SKU-%05d","qty":%d,"price":%.2f},{"sku":"SKU-%05d","qty":%d,"price":%.2f}],`+
			`"total":%.2f,"currency":"EUR","device":%q,"createdAt":"2024-%02d-%02dT%02d:%02d:%02dZ",`+
			`"tags":[%q,%q],`,
		r.IntN(200), pick(statuses),
		first, last, first, last, r.IntN(2) == 0,
		1+r.IntN(400), pick(lastNames), pick(cities), r.IntN(100000),
		r.IntN(100000), 1+r.IntN(5), r.Float64()*200, r.IntN(100000), 1+r.IntN(5), r.Float64()*200,
		r.Float64()*1000, pick(devices), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60),
		pick(words), pick(words))
	var notes []byte
	for len(notes) < size {
		if len(notes) > 0 {
			notes = append(notes, ' ')
		}
		notes = append(notes, pick(words)...)
	}
	return body{fields: f, notes: notes}
}

// Doc returns a new document of exactly Size bytes (larger only when the
// fields alone exceed it) with the given fields. It allocates a fresh slice
// on every call: stores may keep it.
func (g *QueryDocs) Doc(f QueryFields) []byte {
	b := &g.bodies[f.Body%poolSize]
	d := make([]byte, 0, g.size)
	d = append(d, `{"id":`...)
	d = strconv.AppendQuote(d, f.ID)
	if f.TTL != 0 {
		d = append(d, `,"ttl":`...)
		d = strconv.AppendInt(d, int64(f.TTL), 10)
	}
	d = append(d, `,"user":`...)
	d = strconv.AppendQuote(d, f.User)
	d = append(d, `,"n":`...)
	d = strconv.AppendInt(d, f.N, 10)
	d = append(d, `,"cat":`...)
	d = strconv.AppendQuote(d, f.Cat)
	d = append(d, ',')
	return b.finish(d, g.size)
}
