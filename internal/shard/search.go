package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Search runs a shard request on the replica.
func (r *Replica) Search(ctx context.Context, req *wire.ShardRequest) (*wire.ShardResponse, error) {
	start := time.Now()
	sreq, err := BuildRequest(req)
	if err != nil {
		return nil, err
	}
	idx, err := r.acquire()
	if err != nil {
		return nil, err
	}
	res, err := idx.SearchInContext(ctx, sreq)
	seq := r.Seq()
	r.mu.RUnlock()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, api.Errorf(api.CodeTimeout, "shard %d: %v", r.cfg.Shard, ctxErr)
		}
		return nil, fmt.Errorf("search shard %d: %w", r.cfg.Shard, err)
	}
	out := ToResponse(res, seq, r.generation, time.Since(start))
	if len(req.Sort) == 0 {
		for i := range out.Hits {
			out.Hits[i].Sort = nil // bleve reports ["_score"]: noise on the wire
		}
	}
	return out, nil
}

// BuildRequest turns a shard request into a bleve search request.
func BuildRequest(req *wire.ShardRequest) (*bleve.SearchRequest, error) {
	if req.K < 0 || req.K > api.MaxWindow {
		return nil, api.BadRequest("k must be between 0 and %d, got %d", api.MaxWindow, req.K)
	}
	q, err := query.ParseQuery(req.Query)
	if err != nil {
		return nil, api.BadRequest("bad query: %v", err)
	}
	if v, ok := q.(query.ValidatableQuery); ok {
		if err := v.Validate(); err != nil {
			return nil, api.BadRequest("bad query: %v", err)
		}
	}
	sreq := bleve.NewSearchRequestOptions(q, req.K, 0, false)
	sreq.Fields = req.Fields
	if len(req.Sort) > 0 {
		sreq.SortBy(req.Sort)
	}
	for name, f := range req.Facets {
		size := f.Size
		if size == 0 {
			size = 10
		}
		sreq.AddFacet(name, bleve.NewFacetRequest(f.Field, size))
	}
	return sreq, nil
}

// ToResponse converts a bleve result into a shard response.
func ToResponse(res *bleve.SearchResult, seq, generation uint64, took time.Duration) *wire.ShardResponse {
	out := &wire.ShardResponse{
		Hits:       make([]api.Hit, len(res.Hits)),
		Total:      res.Total,
		MaxScore:   res.MaxScore,
		Facets:     res.Facets,
		TookNS:     took.Nanoseconds(),
		Seq:        seq,
		Generation: generation,
	}
	for i, h := range res.Hits {
		score := h.Score
		if math.IsNaN(score) || math.IsInf(score, 0) {
			score = 0
		}
		out.Hits[i] = api.Hit{ID: h.ID, Score: score, Fields: h.Fields, Sort: h.Sort}
	}
	return out
}

// IsClosed reports whether err says the replica was closed (a searcher
// retries on the replica that replaced it).
func IsClosed(err error) bool { return errors.Is(err, ErrClosed) }
