// Package meta is Quarry's metadata on JetStream: index definitions (KV),
// snapshot manifests (KV), shard snapshots (object store) and the document
// stream. Every role opens the same Store, which creates what is missing.
package meta
