package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

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
	if req.Stats != nil {
		ctx = withStats(ctx, req.Stats)
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
			out.Hits[i].Sort = nil // the default tie-break sort: not the caller's
		}
	} else {
		out.DecodedSort = make([][]string, len(res.Hits))
		for i, h := range res.Hits {
			out.DecodedSort[i] = h.DecodedSort
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
	} else {
		// Ties broken by id, as the broker merges: every shard then cuts
		// its top K exactly where one index holding all documents would.
		sreq.SortBy(defaultSort)
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

var defaultSort = []string{"-_score", "_id"}

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

// withStats puts index-wide statistics in a search context: bleve's BM25
// field statistics under its own key, document frequencies under ours.
func withStats(ctx context.Context, gs *GlobalStats) context.Context {
	fc := make(map[string]int, len(gs.FieldCardinality))
	for f, n := range gs.FieldCardinality {
		fc[f] = int(n)
	}
	ctx = context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{DocCount: float64(gs.DocCount), FieldCardinality: fc})
	return WithGlobalStats(ctx, gs)
}

// Stats runs the statistics phase of a request: which terms of which fields
// the query reads on this shard, their document frequencies, the document
// count and those fields' total lengths.
func (r *Replica) Stats(ctx context.Context, req *wire.ShardRequest) (*GlobalStats, error) {
	sreq, err := BuildRequest(req)
	if err != nil {
		return nil, err
	}
	idx, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	reader, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	rec := &recorder{}
	ctx = context.WithValue(ctx, recorderKey, rec)
	ctx = context.WithValue(ctx, search.GetScoringModelCallbackKey,
		search.GetScoringModelCallbackFn(func() string { return index.BM25Scoring }))
	s, err := sreq.Query.Searcher(ctx, reader, idx.Mapping(), search.SearcherOptions{})
	if err != nil {
		return nil, api.BadRequest("query: %v", err)
	}
	s.Close()
	out := &rec.stats
	out.Generation = r.generation
	if out.DocCount, err = reader.DocCount(); err != nil {
		return nil, err
	}
	out.FieldCardinality = make(map[string]uint64, len(out.DocFreq))
	bm, ok := reader.(index.BM25Reader)
	if !ok {
		return nil, fmt.Errorf("shard %d: index reader has no field statistics", r.cfg.Shard)
	}
	for field := range out.DocFreq {
		n, err := bm.FieldCardinality(field)
		if err != nil {
			return nil, fmt.Errorf("field %q statistics: %w", field, err)
		}
		out.FieldCardinality[field] = uint64(n)
	}
	return out, nil
}
