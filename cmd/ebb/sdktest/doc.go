// Package sdktest proves that the official Azure Cosmos DB SDKs work
// unchanged against `ebb serve`. It has no code of its own: its tests build
// the ebb binary from this repository, start `ebb serve` on a free loopback
// port with a fresh data directory, and drive it with the Go SDK
// (github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos): time-to-live,
// partition keys, queries, patch and transactional batch. They also run the
// Go SDK's own emulator suite (emulator_tests.txt lists which of its tests
// must pass and why the rest are out of scope) and the JavaScript SDK's
// smoke script in js/.
//
// It is a module of its own so that the Azure SDK stays out of the engine's
// go.mod. Run it with `go test -race ./...` from this directory; EBB_BIN
// names an ebb binary to test instead of building one.
package sdktest
