// Package indexer builds Quarry's shards and publishes their snapshots.
//
// The document stream is the source of truth: every upsert or delete is a
// message on quarry.v1.docs.<index>.<shard>.<id> and the stream keeps the
// latest message per document. The indexer keeps one replica of every shard
// of every index it serves (see internal/shard), following the stream, and
// turns them into snapshot generations: each shard copied at a consistent
// point, packed with zstd, uploaded to the quarry-segments object store,
// then a manifest (generation, per-shard object, digest and the stream
// sequence it includes) written to the quarry-manifests KV bucket. It
// snapshots when asked (after a bulk ingest) and periodically when
// something changed, so a searcher's replay after a snapshot stays short.
package indexer
