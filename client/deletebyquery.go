package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// DeleteQuery says which documents DeleteByQuery deletes: those a
// search with Q, Query and Filter finds (as in api.SearchRequest), run
// without the index's plugins.
type DeleteQuery struct {
	Q      string          `json:"q,omitempty"`
	Query  json.RawMessage `json:"query,omitempty"`
	Filter json.RawMessage `json:"filter,omitempty"`
	// Max stops after deleting this many (0: DefaultDeleteMax).
	Max int `json:"max,omitempty"`
}

// DefaultDeleteMax bounds one DeleteByQuery when DeleteQuery.Max is 0;
// MaxDeleteMax bounds any (the ids it deleted are kept while it runs).
const (
	DefaultDeleteMax = 100_000
	MaxDeleteMax     = 1_000_000
)

// deleteBatch is how many documents one round of DeleteByQuery finds and
// deletes.
const deleteBatch = 1000

// DeleteResult is what DeleteByQuery did.
type DeleteResult struct {
	// Deleted is how many documents it deleted (a tombstone each).
	Deleted int `json:"deleted"`
	// LastSeq is the stream sequence of the last tombstone (0: none).
	LastSeq uint64 `json:"last_seq"`
	// More says it stopped at Max with documents still matching.
	More bool `json:"more"`
}

// search is the search that finds q's documents: the query as it is
// (an empty variant pipeline: no plugin of the index's), ordered by id.
func (q *DeleteQuery) search() (*api.SearchRequest, error) {
	if q.Q == "" && len(q.Query) == 0 && len(q.Filter) == 0 {
		return nil, api.BadRequest("delete by query: give q, query or filter (a match_all query deletes every document)")
	}
	return &api.SearchRequest{Q: q.Q, Query: q.Query, Filter: q.Filter, Sort: []string{"_id"}, Scoring: api.ScoringShard,
		Variant: &api.Variant{Pipeline: &api.PipelineSpec{}}, AllowPartial: new(false)}, nil
}

// CountByQuery counts the documents DeleteByQuery would delete now (at
// most q.Max of them), deleting none.
func (c *Client) CountByQuery(ctx context.Context, index string, q DeleteQuery) (uint64, error) {
	req, err := q.search()
	if err != nil {
		return 0, err
	}
	req.Size = api.NoHits
	resp, err := c.Search(ctx, index, req)
	if err != nil {
		return 0, err
	}
	return resp.Total, nil
}

// DeleteByQuery deletes every document of index that a search finds,
// in rounds of 1,000: a search (the query as it is: no rewriter or
// ranker of the index's runs, and scores are not computed for the
// order), a tombstone for each hit, and a wait until the searchers have
// applied them, so the next round finds the rest. It returns once a
// search finds none, or at q.Max deletions. A document written to match
// while it runs may be deleted too; one already deleted is not counted
// twice. A failure part way returns what was done with the error.
func (c *Client) DeleteByQuery(ctx context.Context, index string, q DeleteQuery) (DeleteResult, error) {
	var res DeleteResult
	limit := q.Max
	switch {
	case limit == 0:
		limit = DefaultDeleteMax
	case limit < 0 || limit > MaxDeleteMax:
		return res, api.BadRequest("max must be between 1 and %d, got %d", MaxDeleteMax, limit)
	}
	req, err := q.search()
	if err != nil {
		return res, err
	}
	def, err := c.definition(ctx, index)
	if err != nil {
		return res, err
	}
	index = def.Name // an alias names its index
	deleted := map[string]bool{}
	stale := 0
	for res.Deleted < limit {
		req.Size = min(deleteBatch, limit-res.Deleted)
		resp, err := c.Search(ctx, index, req)
		if err != nil {
			return res, fmt.Errorf("delete by query: find documents: %w", err)
		}
		if len(resp.Hits) == 0 {
			return res, nil
		}
		var acks []jetstream.PubAckFuture
		for _, h := range resp.Hits {
			if deleted[h.ID] {
				continue // a searcher not yet at the last round's tombstones
			}
			msg := &nats.Msg{Subject: subject.Doc(index, subject.ShardOf(h.ID, def.Shards), h.ID), Header: nats.Header{}}
			msg.Header.Set(subject.HeaderOp, subject.OpDelete)
			f, err := c.js.PublishMsgAsync(msg)
			if err != nil {
				return res, c.publishErr(ctx, "delete by query: publish a tombstone", err)
			}
			acks = append(acks, f)
			deleted[h.ID] = true
		}
		if len(acks) == 0 {
			// Every hit was deleted already: the searcher that answered
			// trails the one WaitSearchable asked. A while, then again.
			if stale++; stale > 50 {
				return res, api.Errorf(api.CodeUnavailable, "delete by query: the searchers still find %d deleted documents after 50 tries", len(resp.Hits))
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		stale = 0
		for _, f := range acks {
			select {
			case ack := <-f.Ok():
				res.Deleted++
				res.LastSeq = max(res.LastSeq, ack.Sequence)
			case err := <-f.Err():
				return res, c.publishErr(ctx, "delete by query: store a tombstone", err)
			case <-ctx.Done():
				return res, ctx.Err()
			}
		}
		if err := c.WaitSearchable(ctx, index, res.LastSeq); err != nil {
			return res, fmt.Errorf("delete by query: %d deleted, waiting until searches miss them: %w", res.Deleted, err)
		}
	}
	// Stopped at max: say whether any still match.
	req.Size = api.NoHits
	if resp, err := c.Search(ctx, index, req); err == nil {
		res.More = resp.Total > 0
	}
	return res, nil
}
