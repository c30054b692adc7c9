// Package node runs Quarry roles in one process: an embedded or external
// NATS connection, the indexer, searcher and broker, and the HTTP API. It
// is what `quarry serve` and the end-to-end tests run; it sits at the top
// of the import graph with cmd/quarry, and nothing but they imports it.
package node
