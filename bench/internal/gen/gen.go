// Package gen makes the documents every store is given: JSON objects of an
// exact size shaped like a real session/profile container (strings, numbers,
// a nested object, arrays, free text), with the redundancy real data has
// (the same field names in every document, values drawn from small
// vocabularies, text of common words). Every store stores the same bytes;
// ebb parses them, the others store them opaque.
package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
)

// poolSize is how many distinct document bodies a Generator keeps. A write
// picks one and puts its own id and ttl in front, so that generating a
// document costs a copy in the timed loops. 4096 bodies of 1 KiB are 4 MiB:
// far more than a compression block or a page holds, so no store sees the
// same body twice in a block.
const poolSize = 4096

// KeyLen is the length of keys made by Key.
const KeyLen = 16

// Generator makes documents of one size.
type Generator struct {
	size   int
	bodies []body
}

// body is a document after `{"id":"<id>",` and `"ttl":<n>,`: the fields, then
// the notes text, which is cut to make the document exactly size bytes.
type body struct {
	fields []byte // `"type":...,` up to and including the comma before notes
	notes  []byte // long enough for any cut
}

var (
	words = []string{
		"order", "shipped", "customer", "pending", "invoice", "account", "payment",
		"delivery", "warehouse", "refund", "priority", "standard", "express", "review",
		"the", "and", "with", "from", "for", "item", "status", "update", "request",
		"Berlin", "London", "Paris", "Tokyo", "Seattle", "note", "retry", "gift",
	}
	firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Leslie"}
	lastNames  = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Lamport"}
	cities     = []string{"London", "Berlin", "Paris", "Tokyo", "Seattle", "Lagos", "Lima", "Oslo"}
	statuses   = []string{"active", "pending", "suspended", "closed"}
	devices    = []string{"ios", "android", "web", "desktop"}
)

// MinSize is the smallest document size New accepts: the fixed fields with
// the longest id and ttl and empty notes fit in it.
const MinSize = 512

// New returns a generator of documents of size bytes (at least MinSize).
func New(size int) *Generator {
	if size < MinSize {
		size = MinSize
	}
	g := &Generator{size: size, bodies: make([]body, poolSize)}
	for i := range g.bodies {
		g.bodies[i] = makeBody(uint64(i), size)
	}
	return g
}

var shared sync.Map // size -> *Generator

// Shared returns a generator of documents of size bytes, made once per size
// and shared: a Generator is read-only after New, so safe for concurrent use.
func Shared(size int) *Generator {
	if g, ok := shared.Load(size); ok {
		return g.(*Generator)
	}
	g, _ := shared.LoadOrStore(size, New(size))
	return g.(*Generator)
}

// Size is the size of every document the generator makes.
func (g *Generator) Size() int { return g.size }

func makeBody(seed uint64, size int) body {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	first, last := pick(firstNames), pick(lastNames)
	f := fmt.Appendf(nil,
		`"type":"session","tenantId":"tenant-%03d","status":%q,`+
			`"user":{"name":"%s %s","email":"%s.%s@example.com","age":%d,"verified":%t,`+
			`"address":{"street":"%d %s Street","city":%q,"zip":"%05d","geo":[%.4f,%.4f]}},`+
			`"device":%q,"loginCount":%d,"balance":%.2f,"createdAt":"2024-%02d-%02dT%02d:%02d:%02dZ",`+
			`"tags":[%q,%q,%q],"metrics":{"views":%d,"clicks":%d,"ratio":%.5f},`,
		r.IntN(200), pick(statuses),
		first, last, first, last, 18+r.IntN(60), r.IntN(2) == 0,
		1+r.IntN(400), pick(lastNames), pick(cities), r.IntN(100000), r.Float64()*180-90, r.Float64()*360-180,
		pick(devices), r.IntN(5000), r.Float64()*10000, 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60),
		pick(words), pick(words), pick(words), r.IntN(100000), r.IntN(10000), r.Float64())
	var notes []byte
	for len(notes) < size {
		if len(notes) > 0 {
			notes = append(notes, ' ')
		}
		notes = append(notes, pick(words)...)
	}
	return body{fields: f, notes: notes}
}

// Key returns the key of item n under prefix: the prefix and n in decimal,
// zero-padded to KeyLen characters in all (longer when n needs it).
func Key(prefix string, n uint64) string {
	var b [32]byte
	return string(AppendKey(b[:0], prefix, n))
}

// AppendKey appends Key(prefix, n) to dst.
func AppendKey(dst []byte, prefix string, n uint64) []byte {
	dst = append(dst, prefix...)
	var num [20]byte
	s := strconv.AppendUint(num[:0], n, 10)
	for i := len(prefix) + len(s); i < KeyLen; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Doc returns a new document of exactly Size bytes whose id is key, with a
// "ttl" property of ttl seconds unless ttl is 0, and body number n (mod the
// pool). It allocates a fresh slice on every call: stores may keep it.
func (g *Generator) Doc(key string, ttl int32, n uint64) []byte {
	b := &g.bodies[n%poolSize]
	d := make([]byte, 0, g.size)
	d = append(d, `{"id":`...)
	d = strconv.AppendQuote(d, key)
	d = append(d, ',')
	if ttl != 0 {
		d = append(d, `"ttl":`...)
		d = strconv.AppendInt(d, int64(ttl), 10)
		d = append(d, ',')
	}
	return b.finish(d, g.size)
}

// finish appends b's fields and as much of its notes as makes the document
// d size bytes (larger only when its head already is), and closes it.
func (b *body) finish(d []byte, size int) []byte {
	d = append(d, b.fields...)
	d = append(d, `"notes":"`...)
	pad := max(size-len(d)-len(`"}`), 0)
	notes := b.notes[:pad]
	// Never end the text on a space: trim it into a dot.
	if pad > 0 && notes[pad-1] == ' ' {
		d = append(d, notes[:pad-1]...)
		d = append(d, '.')
	} else {
		d = append(d, notes...)
	}
	return append(d, `"}`...)
}
