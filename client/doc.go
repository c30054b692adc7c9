// Package client is the Go client of Quarry: create and list indexes, put
// and delete documents (one at a time or in bulk from NDJSON), read one by
// id (Get), and search.
// It talks to Quarry over NATS; the same operations are available as JSON
// over HTTP (see the README) and through the quarry CLI, which uses this
// package.
//
// Documents are JSON objects with a string "id". An upsert or delete is
// acknowledged once JetStream has stored it, and is searchable within
// milliseconds after that.
package client
