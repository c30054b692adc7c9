// Package shard is one replica of one shard: a bleve (scorch) index that
// follows its shard's subjects on the document stream. Searchers serve
// queries from replicas; the indexer keeps replicas to snapshot. A replica
// starts empty, from a local directory, or from a snapshot, then replays the
// stream after the sequence it already holds, so a restarted process comes
// back to exactly the acknowledged state.
//
// The last applied stream sequence is written into the index (bleve
// internal key "quarry.seq") in the same batch as the documents, so a copy
// of the index always knows which updates it includes.
package shard
