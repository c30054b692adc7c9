package api

import "time"

// RejectedDocument records one message of the document stream that its
// shard could not apply: the stream acknowledged it (it was written past
// the client's checks, straight into JetStream, or before a limit
// existed), and the indexer skipped it for good, as every replay does: over
// the index's documents.max_fields or max_depth, malformed JSON, a
// document bleve refused, a bad subject. The indexer records each once
// per shard and stream sequence; the last MaxRejectedDocuments of an
// index are kept, and go with the index.
type RejectedDocument struct {
	Index string `json:"index"`
	Shard int    `json:"shard"`
	// Seq is the stream sequence of the message skipped.
	Seq uint64 `json:"seq"`
	// ID is the document's id; empty when the message's subject names
	// none (a bad subject).
	ID string `json:"id,omitempty"`
	// Reason says why it could not be applied, naming the limit it is
	// over when it is over one.
	Reason string `json:"reason"`
	// Time is when the stream stored the message.
	Time time.Time `json:"time"`
}

// MaxRejectedDocuments is how many records of rejected documents are kept
// per index: the most recent ones.
const MaxRejectedDocuments = 1000

// MaxRejectedReason is the longest Reason (and ID) a record keeps, in
// bytes; longer ones are cut, ending in "…".
const MaxRejectedReason = 1024
