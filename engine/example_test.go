package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// exampleDir makes a fresh directory for one example; the example removes
// it when done.
func exampleDir() string {
	dir, err := os.MkdirTemp("", "ebb-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// manualClock is a wall clock moved by hand, for Options.Clock: it makes
// expiry testable without waiting.
type manualClock struct{ sec atomic.Int64 }

func (c *manualClock) Now() time.Time          { return time.Unix(c.sec.Load(), 0) }
func (c *manualClock) Advance(d time.Duration) { c.sec.Add(int64(d / time.Second)) }

// Open a database, create a container whose items expire an hour after
// their last write, write an item with its own ttl, and read it back.
func Example() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	db, err := engine.Open(dir, nil) // nil: the default Options
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions", DefaultTTL: engine.TTL(3600)})
	if err != nil {
		log.Fatal(err)
	}
	// The item's own ttl (60 s) wins over the container's DefaultTTL.
	if _, err := c.Create(ctx, []byte(`{"id":"s1","user":"ada","ttl":60}`)); err != nil {
		log.Fatal(err)
	}
	it, err := c.Read(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.ID, "expires", it.ExpiresAt-it.TS, "seconds after its last write")

	_, err = c.Read(ctx, "nobody")
	fmt.Println(errors.Is(err, engine.ErrNotFound))
	// Output:
	// s1 expires 60 seconds after its last write
	// true
}

// Expiry under a clock the caller controls: an item is visible until
// _ts + ttl, and not found from then on.
func Example_expiry() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	clock := &manualClock{}
	clock.sec.Store(1_700_000_000)
	db, err := engine.Open(dir, &engine.Options{Clock: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "cache", DefaultTTL: engine.TTL(10)})
	if err != nil {
		log.Fatal(err)
	}
	it, err := c.Upsert(ctx, []byte(`{"id":"k","v":1}`)) // no ttl of its own: DefaultTTL applies
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written at", it.TS, "expires at", it.ExpiresAt)

	clock.Advance(9 * time.Second)
	_, err = c.Read(ctx, "k")
	fmt.Println("after 9 s:", err == nil)

	clock.Advance(1 * time.Second)
	_, err = c.Read(ctx, "k")
	fmt.Println("after 10 s:", errors.Is(err, engine.ErrNotFound))
	// Output:
	// written at 1700000000 expires at 1700000010
	// after 9 s: true
	// after 10 s: true
}

// ExpiresAt is 0 for an item that never expires: TTL off, or a ttl of -1.
func ExampleItem() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	clock := &manualClock{}
	clock.sec.Store(1_700_000_000)
	db, err := engine.Open(dir, &engine.Options{Clock: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(3600)})
	if err != nil {
		log.Fatal(err)
	}
	for _, doc := range []string{`{"id":"default"}`, `{"id":"own","ttl":5}`, `{"id":"forever","ttl":-1}`} {
		it, err := c.Upsert(ctx, []byte(doc))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(it.ID, it.ExpiresAt)
	}
	// Output:
	// default 1700003600
	// own 1700000005
	// forever 0
}

// Query the live items with Cosmos DB's SQL; parameters are bound by name.
func ExampleContainer_Query() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	db, err := engine.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "people"})
	if err != nil {
		log.Fatal(err)
	}
	for _, doc := range []string{`{"id":"1","name":"ada","age":36}`, `{"id":"2","name":"alan","age":41}`, `{"id":"3","name":"grace","age":85}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			log.Fatal(err)
		}
	}
	for it, err := range c.Query(ctx, "SELECT VALUE c.name FROM c WHERE c.age > @min ORDER BY c.age DESC",
		engine.Param{Name: "@min", Value: 40}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(it.Body))
	}
	// Output:
	// "grace"
	// "alan"
}

// A batch commits all of its operations or none, in one journal entry.
func ExampleContainer_ExecuteBatch() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	db, err := engine.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	b := c.NewBatch()
	b.Create([]byte(`{"id":"o1","total":10}`)).Create([]byte(`{"id":"o2","total":20}`))
	items, err := c.ExecuteBatch(ctx, b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(items), "items written")

	// o1 exists, so this Create fails, and the whole batch with it: o3 is
	// not written either.
	b = c.NewBatch()
	b.Create([]byte(`{"id":"o3","total":30}`)).Create([]byte(`{"id":"o1","total":99}`))
	_, err = c.ExecuteBatch(ctx, b)
	fmt.Println(errors.Is(err, engine.ErrConflict))
	_, err = c.Read(ctx, "o3")
	fmt.Println(errors.Is(err, engine.ErrNotFound))
	// Output:
	// 2 items written
	// true
	// true
}

// Open creates the database directory on first use and locks it: a second
// Open of the same directory fails until Close.
func ExampleOpen() {
	dir := exampleDir()
	defer os.RemoveAll(dir)

	db, err := engine.Open(dir, nil) // nil: the default Options

	if err != nil {
		log.Fatal(err)
	}
	_, err = engine.Open(dir, nil)
	fmt.Println(errors.Is(err, engine.ErrLocked))
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}

	_, err = engine.Open("", nil)
	fmt.Println(errors.Is(err, engine.ErrNoDatabase))
	// Output:
	// true
	// true
}

// A container's DefaultTTL: nil leaves TTL off, -1 turns it on without a
// default, n expires items n seconds after their last write.
func ExampleDB_CreateContainer() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	db, err := engine.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions", DefaultTTL: engine.TTL(3600)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.ID(), *c.Properties().DefaultTTL)

	_, err = db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions"})
	fmt.Println(errors.Is(err, engine.ErrConflict))
	_, err = db.CreateContainer(ctx, engine.ContainerProperties{ID: "bad", DefaultTTL: engine.TTL(0)})
	fmt.Println(errors.Is(err, engine.ErrInvalidProperties))
	// Output:
	// sessions 3600
	// true
	// true
}

// An item's own "ttl" overrides the container's DefaultTTL for that item:
// n seconds after this write, or -1 for never.
func ExampleContainer_Upsert() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	clock := &manualClock{}
	clock.sec.Store(1_700_000_000)
	db, err := engine.Open(dir, &engine.Options{Clock: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1)})
	if err != nil {
		log.Fatal(err)
	}
	it, err := c.Upsert(ctx, []byte(`{"id":"token","ttl":30}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.ID, it.TS, it.ExpiresAt)

	_, err = c.Upsert(ctx, []byte(`{"id":"token","ttl":0}`))
	fmt.Println(errors.Is(err, engine.ErrInvalidTTL))
	// Output:
	// token 1700000000 1700000030
	// true
}

// Read returns the item with its system properties (_ts, _etag) in the
// body, or ErrNotFound when there is none or it has expired.
func ExampleContainer_Read() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	clock := &manualClock{}
	clock.sec.Store(1_700_000_000)
	db, err := engine.Open(dir, &engine.Options{Clock: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(60)})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","n":1}`)); err != nil {
		log.Fatal(err)
	}
	it, err := c.Read(ctx, "a")
	if err != nil {
		log.Fatal(err)
	}
	var body struct {
		ID string `json:"id"`
		N  int    `json:"n"`
		TS int64  `json:"_ts"`
	}
	if err := json.Unmarshal(it.Body, &body); err != nil {
		log.Fatal(err)
	}
	fmt.Println(body.ID, body.N, body.TS, it.ExpiresAt)

	clock.Advance(time.Minute)
	_, err = c.Read(ctx, "a")
	fmt.Println(errors.Is(err, engine.ErrNotFound))
	// Output:
	// a 1 1700000000 1700000060
	// true
}
