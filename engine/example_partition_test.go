package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/ebbdb/ebb/engine"
)

// A container with a partition key: the same id in two partitions, point
// calls through Container.Partition, a batch in one partition, and queries
// over one partition or all of them.
func ExampleContainer_Partition() {
	ctx := context.Background()
	dir := exampleDir()
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "orders", PartitionKeyPath: "/tenant"})
	if err != nil {
		log.Fatal(err)
	}
	acme, globex := c.Partition(engine.StringKey("acme")), c.Partition(engine.StringKey("globex"))
	if _, err := acme.Create(ctx, []byte(`{"id":"o1","tenant":"acme","total":10}`)); err != nil {
		log.Fatal(err)
	}
	// The same id in another partition is another item.
	if _, err := c.Create(ctx, []byte(`{"id":"o1","tenant":"globex","total":99}`)); err != nil {
		log.Fatal(err)
	}
	items, err := c.ExecuteBatch(ctx, acme.NewBatch().
		Create([]byte(`{"id":"o2","tenant":"acme","total":20}`)).
		Create([]byte(`{"id":"o1","tenant":"acme"}`))) // a conflict: nothing is written
	var be *engine.BatchError
	fmt.Println(len(items), errors.As(err, &be), be.Index, errors.Is(err, engine.ErrConflict))

	it, err := globex.Read(ctx, "o1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.PartitionKey, it.ID)
	_, err = c.Read(ctx, "o1") // which one? Read must name the key
	fmt.Println(errors.Is(err, engine.ErrInvalidPartitionKey))

	for it, err := range c.Query(ctx, `SELECT * FROM c WHERE c.id = 'o1'`) { // every partition
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("all:", it.PartitionKey, it.ID)
	}
	for it, err := range acme.Query(ctx, `SELECT VALUE COUNT(1) FROM c`) { // one partition
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("acme count:", string(it.Body))
	}
	k, _ := engine.ParsePartitionKey([]byte(`["acme"]`)) // the x-ms-documentdb-partitionkey header
	fmt.Println(k == engine.StringKey("acme"))
	// Output:
	// 0 true 1 true
	// ["globex"] o1
	// true
	// all: ["acme"] o1
	// all: ["globex"] o1
	// acme count: 1
	// true
}
