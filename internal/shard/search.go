package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
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
	ctx = withTermLimit(ctx, req.MaxTerms)

	var res *bleve.SearchResult
	if len(req.Sort) == 0 {
		res, err = topKByScoreThenID(ctx, idx, sreq, req.K)
	} else {
		res, err = idx.SearchInContext(ctx, sreq)
	}
	seq := r.Seq()
	r.mu.RUnlock()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, api.Errorf(api.CodeTimeout, "shard %d: %v", r.cfg.Shard, ctxErr)
		}
		if tooMany := tooManyTerms(err, r.cfg.Shard, req.MaxTerms); tooMany != nil {
			return nil, tooMany
		}
		return nil, fmt.Errorf("search shard %d: %w", r.cfg.Shard, err)
	}
	out := ToResponse(res, seq, r.generation, time.Since(start))
	if len(req.Sort) == 0 {
		for i := range out.Hits {
			out.Hits[i].SortKeys = nil // the default tie-break sort: not the caller's
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

// topKByScoreThenID returns the top k hits ordered by score, ties by id: the
// order the broker merges in, so every shard cuts its top k exactly where
// one index holding all documents would. Sorting by ["-_score", "_id"] in
// bleve does that but costs 3× (it loads every candidate's id:
// BenchmarkShardSearch). Instead:
//
//  1. one search by score alone for 4(k+1) hits, without stored fields (a
//     bigger heap costs little next to scoring, and covers most ties);
//  2. only if a tie still straddles the cut, searches for 4× more until
//     the tied group is whole; ties ordered by id here;
//  3. the stored fields of the k winners, by id.
func topKByScoreThenID(ctx context.Context, idx bleve.Index, sreq *bleve.SearchRequest, k int) (*bleve.SearchResult, error) {
	if k == 0 {
		return idx.SearchInContext(ctx, sreq)
	}
	fields := sreq.Fields
	sreq.Fields = nil
	size := 4 * (k + 1)
	var res *bleve.SearchResult
	for {
		sreq.Size = size
		r, err := idx.SearchInContext(ctx, sreq)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = r
		} else {
			res.Hits = r.Hits
		}
		sreq.Facets = nil // computed once, by the first search
		hits := res.Hits
		if len(hits) < size || hits[len(hits)-1].Score != hits[k-1].Score || size > api.MaxWindow*4 {
			break // every hit tied with the k-th is here
		}
		size *= 4
	}
	slices.SortStableFunc(res.Hits, func(a, b *search.DocumentMatch) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(res.Hits) > k {
		res.Hits = res.Hits[:k]
	}
	if len(fields) == 0 || len(res.Hits) == 0 {
		return res, nil
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	fr := bleve.NewSearchRequestOptions(query.NewDocIDQuery(ids), len(ids), 0, false)
	fr.Fields = fields
	fres, err := idx.SearchInContext(ctx, fr)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]map[string]any, len(fres.Hits))
	for _, h := range fres.Hits {
		byID[h.ID] = h.Fields
	}
	for _, h := range res.Hits {
		h.Fields = byID[h.ID]
	}
	return res, nil
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
		// The encoded sort values: they compare correctly across shards,
		// and the broker decodes those of the hits it returns.
		out.Hits[i] = api.Hit{ID: h.ID, Score: score, Fields: h.Fields, SortKeys: h.Sort}
	}
	return out
}

// IsClosed reports whether err says the replica was closed (a searcher
// retries on the replica that replaced it).
func IsClosed(err error) bool { return errors.Is(err, ErrClosed) }

// withStats puts index-wide statistics in a search context: bleve's BM25
// field statistics under its own key, document frequencies under ours.
func withStats(ctx context.Context, gs *GlobalStats) context.Context {
	ctx = context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{DocCount: float64(gs.DocCount), FieldCardinality: gs.FieldCardinality})
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
	ctx = search.ContextWithTermSearchersCounter(withTermLimit(ctx, req.MaxTerms))
	s, err := sreq.Query.Searcher(ctx, reader, idx.Mapping(), search.SearcherOptions{})
	if tooMany := tooManyTerms(err, r.cfg.Shard, req.MaxTerms); tooMany != nil {
		return nil, tooMany
	}
	if err != nil {
		return nil, api.BadRequest("query: %v", err)
	}
	s.Close()
	if err := ctx.Err(); err != nil { // building the searchers took the time
		return nil, api.Errorf(api.CodeTimeout, "shard %d: statistics: %v", r.cfg.Shard, err)
	}
	out := &rec.stats
	out.Generation = r.generation
	if out.DocCount, err = reader.DocCount(); err != nil {
		return nil, err
	}
	out.FieldCardinality = make(map[string]int, len(out.DocFreq))
	bm, ok := reader.(index.BM25Reader)
	if !ok {
		return nil, fmt.Errorf("shard %d: index reader has no field statistics", r.cfg.Shard)
	}
	for field := range out.DocFreq {
		n, err := bm.FieldCardinality(field)
		if err != nil {
			return nil, fmt.Errorf("field %q statistics: %w", field, err)
		}
		out.FieldCardinality[field] = n
	}
	return out, nil
}
