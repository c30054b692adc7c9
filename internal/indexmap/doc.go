// Package indexmap turns an index definition's mapping JSON into the bleve
// mapping that both the indexer and the searchers build shards with, so the
// two always agree on analysis and scoring.
package indexmap
