// Package searcher serves shards of Quarry indexes over NATS.
//
// For each shard it serves, a searcher downloads the current snapshot named
// by the index's manifest, verifies its digest, opens it with bleve, replays
// the document stream after the snapshot's sequence and, once caught up,
// answers shard requests on quarry.v1.shard.<index>.<shard> in a queue group
// shared by every replica of that shard. It keeps following the stream, so
// an acknowledged update is searchable within milliseconds. When a new
// generation appears it is downloaded and caught up beside the serving one,
// then swapped in with one atomic pointer store; queries in flight finish
// on the replica they started on.
package searcher
