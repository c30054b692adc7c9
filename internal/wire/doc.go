// Package wire holds the internal shard protocol between broker and
// searchers, and the payload compression used on large internal messages.
// Shard requests are JSON (small, one per shard); shard responses use a
// compact binary form (see binary.go), five times cheaper than JSON.
package wire
