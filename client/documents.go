package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Document is one document as Quarry stores it.
type Document struct {
	Index string `json:"index"`
	ID    string `json:"id"`
	// Seq is the stream sequence that stored this version: a searcher
	// whose shard has applied Seq (a search's profile shows it) serves it.
	Seq uint64 `json:"seq"`
	// Stored is when the stream stored it.
	Stored time.Time `json:"stored"`
	// Source is the document exactly as it was written.
	Source json.RawMessage `json:"source"`
}

// Get returns one document by id: its latest version, as it was written.
// An unknown index or id, or a deleted document, is an error matching
// api.ErrNotFound whose message says which.
//
// The document is read from the JetStream stream, not from a searcher. The
// stream is the source of truth: a subject per document keeps its last
// message, the document as written or a tombstone, so the read is exact
// (every field, not only the ones the mapping stores), fresh (a Put or
// Delete is acknowledged once the stream holds it, so a Get after it sees
// it, with no wait for indexing) and needs no searcher to be running. It
// is one direct get of the subject's last message. On a replicated stream
// a follower may answer it, which can trail the latest write by the
// replication lag.
func (c *Client) Get(ctx context.Context, index, id string) (*Document, error) {
	if err := api.ValidDocumentID(id); err != nil {
		return nil, err
	}
	def, err := c.definition(ctx, index)
	if err != nil {
		return nil, err
	}
	index = def.Name // an alias names its index
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	for fresh := false; ; fresh = true {
		msg, err := st.Docs.GetLastMsgForSubject(ctx, subject.Doc(index, subject.ShardOf(id, def.Shards), id))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound) && !fresh:
			// The definition may be a cached one of an index deleted
			// since, or deleted and made again with other shards: read
			// it again before blaming the id.
			now, err := c.Index(ctx, index)
			c.mu.Lock()
			delete(c.defs, index)
			if err == nil {
				c.defs[index] = now
			}
			c.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if now.Shards != def.Shards || !now.Created.Equal(def.Created) {
				def = now
				continue
			}
			fallthrough
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return nil, api.NotFound("document %q does not exist in index %q", id, index)
		case err != nil:
			return nil, fmt.Errorf("get document %q of index %q: %w", id, index, err)
		case msg.Header.Get(subject.HeaderOp) == subject.OpDelete:
			return nil, api.NotFound("document %q of index %q was deleted (stream sequence %d)", id, index, msg.Sequence)
		}
		return &Document{Index: index, ID: id, Seq: msg.Sequence, Stored: msg.Time, Source: msg.Data}, nil
	}
}

// RejectedDocuments lists the documents of an index that the stream
// acknowledged but its shards could not apply (over the index's
// documents.max_fields or max_depth, malformed, refused by bleve, on a
// bad subject: written past the client's checks), each with its shard,
// stream sequence, id and why, in stream order (the newest last): the
// last limit of them (0: every one kept, api.MaxRejectedDocuments at
// most). The indexer records them as it skips them; they go with the
// index. It asks the admin API, so a team's NATS user may read those of
// its own indexes.
func (c *Client) RejectedDocuments(ctx context.Context, index string, limit int) ([]api.RejectedDocument, error) {
	if limit < 0 {
		return nil, api.BadRequest("limit must be 0 (every record kept) or more, got %d", limit)
	}
	var out []api.RejectedDocument
	if err := c.admin(ctx, index, "documents.rejected", map[string]any{"limit": limit}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
