// Package querystats reads a bleve query's term statistics through an
// index reader: what exact distributed scoring needs of a query, apart
// from the index that holds the documents.
//
// A shard request's query is parsed once per process (RequestQuery). The
// statistics phase (Count) builds the query's searchers over a recording
// reader and returns the (field, term) pairs it read with their document
// frequencies, the document count and the fields' token totals; a search
// with an index's statistics builds them over a reader that scores with
// those (ScopedQuery). Reader is that reader: internal/shard's index type
// opens one over each scorch snapshot, and counts its token totals
// (TokenCounter). ListTerms runs the same recording over a reader with no
// documents, to list the terms a query reads from the index's mapping
// alone.
//
// internal/shard uses it for its statistics phase and its searches; the
// broker uses ListTerms to put a new query's statistics together from its
// cache of terms. It imports bleve's query, mapping, search and index API
// packages, never an index engine (scorch and its zap segments, upsidedown
// and its stores) nor internal/shard, so the broker links none
// (internal/archtest's TestBrokerLinksNoIndex).
package querystats
