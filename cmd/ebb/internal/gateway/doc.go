// Package gateway serves the Azure Cosmos DB NoSQL REST API over ebb: the
// routes, master-key authentication, headers, status codes and error bodies
// that the Cosmos DB SDKs use, with one engine.DB per Cosmos database. It is
// what `ebb serve` runs; Server is an http.Handler.
//
// # Routes
//
//	GET    /                                   account metadata (advertises Config.Endpoint)
//	POST   /dbs                                create a database, or query them
//	GET    /dbs                                list databases
//	GET    /dbs/{db}, DELETE /dbs/{db}         read, delete a database
//	POST   /dbs/{db}/colls                     create a container, or query them
//	GET    /dbs/{db}/colls                     list containers
//	GET|PUT|DELETE /dbs/{db}/colls/{c}         read, replace, delete a container
//	GET    /dbs/{db}/colls/{c}/pkranges        the one partition key range
//	POST   /dbs/{db}/colls/{c}/docs            create, upsert (x-ms-documentdb-is-upsert),
//	                                           query (application/query+json) or
//	                                           transactional batch (x-ms-cosmos-is-batch-request)
//	GET    /dbs/{db}/colls/{c}/docs            read feed, or change feed with A-IM
//	GET|PUT|DELETE|PATCH /dbs/{db}/colls/{c}/docs/{id}
//	POST   /offers, GET|PUT /offers/{id}       throughput offers (kept, not enforced)
//
// Every request is signed: type=master&ver=1.0&sig=HMAC-SHA256 over the
// verb, resource type, resource address and x-ms-date (see Sign), or an
// emulator AAD token; a wrong signature is a 401, an x-ms-date more than
// 15 minutes off a 403. Errors are {"code": ..., "message": ...} with the
// service's status (and x-ms-substatus where the service sends one);
// fromEngine maps the engine's sentinels to them in one place.
//
// # Partition keys
//
// A container has one partition key path (hierarchical keys are refused
// with a 400 that says so). Point operations and batches name the key in
// x-ms-documentdb-partitionkey (a JSON array of one value); a create or
// upsert without it takes the key from the document. Queries run in the
// partition the header names or the WHERE clause pins (c.key = value),
// else across partitions, which needs
// x-ms-documentdb-query-enablecrosspartition and, as the service's gateway,
// refuses ORDER BY, aggregates, TOP, OFFSET and LIMIT there (400, substatus
// 1004). Cross-partition rows come in creation order. A query plan request
// (x-ms-cosmos-is-query-plan-request) gets a plan with the one range "0"
// for the queries a gateway serves across partitions.
//
// # Limits
//
// Query pages resume by skipping the rows already returned (see
// itemquery.go): each page costs time linear in the rows before it, and
// writes between pages may shift rows. A cross-partition page reads the
// whole result and the container's change feed. Item _rids are a hash of
// the partition key and id, so an item deleted and created again keeps its
// _rid. Request charges are a nominal 1; throughput is kept, not enforced.
// Ids are the engine's: / \ ? # and control characters are refused (400),
// where the service stores some of them and then cannot route to them.
// Patch and batch read, change and write back, conditioned on the etag
// read, retrying when a concurrent write wins.
//
// # Files
//
// Config.Dir holds one folder per database, named by dirName, with
// meta.json (the sidecar: rids, timestamps, etags, and the container
// properties the engine does not keep, written atomically) and data/ (the
// engine's directory). At start a folder without a sidecar is a database
// whose creation did not finish and is removed, and the sidecar is
// reconciled with the engine's containers.
package gateway
