package shard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Search runs a shard request on the replica.
func (r *Replica) Search(ctx context.Context, req *wire.ShardRequest) (*wire.ShardResponse, error) {
	start := time.Now()
	sreq, err := BuildRequest(req)
	if err != nil {
		return nil, err
	}
	var counted *GlobalStats
	var scoped *querystats.ScopedQuery
	if req.Stats == nil && req.LocalStats {
		if counted, err = r.Stats(ctx, req); err != nil {
			return nil, err
		}
		local := *req
		local.Stats, local.MaxStaleUpdates = counted, 0
		req = &local
	}
	if req.Stats != nil {
		if err := r.checkFresh(req); err != nil {
			return nil, err
		}
		ctx = withStats(ctx, req.Stats)
		scoped = querystats.NewScopedQuery(sreq.Query, req.Stats, req.StatsComposed && req.MaxStaleUpdates > 0)
		sreq.Query = scoped
	}
	idx, seq, release, err := r.searchable(req)
	if err != nil {
		return nil, err
	}
	// Deferred, so that a panic below (bleve's, or one injected) leaves
	// the replica's lock free: its searcher recovers and serves on, and
	// Close does not wait for ever.
	defer release()
	if panicInjected(ctx) {
		panic(fmt.Sprintf("shard %d: injected fault (searcher FaultPanic)", r.cfg.Shard))
	}
	ctx = querystats.WithTermLimit(ctx, req.MaxTerms)

	// The hits' stored fields are loaded once they are known (loadFields).
	fields := sreq.Fields
	sreq.Fields = nil
	var res *bleve.SearchResult
	if len(req.Sort) == 0 {
		res, err = topKByScoreThenID(ctx, idx, sreq, req.K)
	} else {
		res, err = idx.SearchInContext(ctx, sreq)
	}
	// The reply is bounded as it is built: the hits' ids, sort keys and
	// explanations, then their stored fields as they load.
	var fieldsJSON []json.RawMessage
	budget := &replyBudget{max: req.MaxReplyBytes}
	if err == nil {
		if len(req.Sort) == 0 {
			for _, h := range res.Hits {
				h.Sort = nil // the default tie-break sort: not the caller's
			}
		}
		err = budget.takeHits(res.Hits)
	}
	if err == nil {
		fieldsJSON, err = loadFields(ctx, idx, res.Hits, fields, budget)
	}
	if err == nil && req.Highlight != nil {
		err = highlightHits(ctx, idx, res.Hits, req.Highlight, budget)
	}
	var suggested api.FacetResult
	if err == nil && req.Suggest != nil {
		suggested, err = suggest(ctx, idx, req.Suggest)
	}
	if err != nil {
		if errors.Is(err, bleve.ErrorIndexClosed) {
			return nil, ErrPITGone // ended while this search waited
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, api.Errorf(api.CodeTimeout, "shard %d: %v", r.cfg.Shard, ctxErr)
		}
		if tooMany := querystats.TooManyTerms(err, r.cfg.Shard, req.MaxTerms); tooMany != nil {
			return nil, tooMany
		}
		if tooLarge := replyTooLarge(err, r.cfg.Shard, req.MaxReplyBytes); tooLarge != nil {
			return nil, tooLarge
		}
		if lacks := scoped.Lacks(r.cfg.Shard, err); lacks != nil {
			return nil, lacks
		}
		return nil, fmt.Errorf("search shard %d: %w", r.cfg.Shard, err)
	}
	out := ToResponse(res, fieldsJSON, seq, r.generation.Load(), time.Since(start))
	out.Stats = counted
	if req.Suggest != nil {
		if out.Facets == nil {
			out.Facets = map[string]api.FacetResult{}
		}
		out.Facets[wire.SuggestFacet] = suggested
	}
	return out, nil
}

// BuildRequest turns a shard request into a bleve search request (its
// query from querystats.RequestQuery).
func BuildRequest(req *wire.ShardRequest) (*bleve.SearchRequest, error) {
	q, err := querystats.RequestQuery(req)
	if err != nil {
		return nil, err
	}
	sreq := bleve.NewSearchRequestOptions(q, req.K, 0, req.Explain)
	sreq.Fields = req.Fields
	// Highlighting reads where each term matched (highlightHits).
	sreq.IncludeLocations = req.Highlight != nil
	if len(req.Sort) > 0 {
		sreq.SortBy(req.Sort)
		if len(req.SearchAfter) > 0 {
			after := make([]string, len(req.SearchAfter))
			for i, v := range req.SearchAfter {
				after[i] = string(v)
			}
			sreq.SearchAfter = after
		}
	}
	for name, f := range req.Facets {
		if ranges := f.EffectiveDateRanges(); ranges != nil {
			fr := bleve.NewFacetRequest(f.Field, len(ranges))
			for _, r := range ranges {
				from, to := r.Bounds()
				fr.AddDateTimeRange(r.Name, from, to)
			}
			sreq.AddFacet(name, fr)
			continue
		}
		if ranges := f.EffectiveRanges(); ranges != nil {
			fr := bleve.NewFacetRequest(f.Field, len(ranges))
			for _, r := range ranges {
				fr.AddNumericRange(r.Name, r.From, r.To)
			}
			sreq.AddFacet(name, fr)
			continue
		}
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
//  1. one search by score alone for tieOverfetch×(k+1) hits (covers most
//     ties);
//  2. only if a tie still straddles the cut, searches for 4× more until
//     the tied group is whole; ties ordered by id here.
//
// sreq asks for no stored fields: the caller loads those of the k winners.
// tieOverfetch is how many times k+1 hits a shard's first search asks
// for. Every hit asked for costs bleve allocations (its collector's pool
// of DocumentMatch, one more per hit when it loads fields), so fewer is
// cheaper, until the searches again for ties cost more: on the catalogue
// (BenchmarkEndToEnd, quarry-4-shards) 2 gave 218 KB a query against
// 256 KB with 4 and a p50 about 10% lower; 1 was slower than 4 (ties at
// the cut searched again).
const tieOverfetch = 2

func topKByScoreThenID(ctx context.Context, idx bleve.Index, sreq *bleve.SearchRequest, k int) (*bleve.SearchResult, error) {
	if k == 0 {
		return idx.SearchInContext(ctx, sreq)
	}
	size := tieOverfetch * (k + 1)
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
	return res, nil
}

// facetResults are bleve's term facets in the shard protocol's form; nil
// for none.
func facetResults(fs search.FacetResults) map[string]api.FacetResult {
	if len(fs) == 0 {
		return nil
	}
	out := make(map[string]api.FacetResult, len(fs))
	for name, f := range fs {
		fr := api.FacetResult{Field: f.Field, Total: f.Total, Missing: f.Missing, Other: f.Other}
		if f.Terms != nil {
			for _, t := range f.Terms.Terms() {
				fr.Terms = append(fr.Terms, api.TermCount{Term: t.Term, Count: t.Count})
			}
		}
		for _, r := range f.NumericRanges {
			fr.Ranges = append(fr.Ranges, api.RangeCount{Name: r.Name, From: r.Min, To: r.Max, Count: r.Count})
		}
		for _, r := range f.DateRanges { // the broker takes the bounds from the request
			fr.Ranges = append(fr.Ranges, api.RangeCount{Name: r.Name, Count: r.Count})
		}
		out[name] = fr
	}
	return out
}

// ToResponse converts a bleve result into a shard response, with the
// hits' stored fields as loadFields wrote them (fieldsJSON[i] for hit i;
// nil: the hit's Fields, if any).
func ToResponse(res *bleve.SearchResult, fieldsJSON []json.RawMessage, seq, generation uint64, took time.Duration) *wire.ShardResponse {
	out := &wire.ShardResponse{
		Hits:       make([]api.Hit, len(res.Hits)),
		Total:      res.Total,
		MaxScore:   res.MaxScore,
		Facets:     facetResults(res.Facets),
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
		if i < len(fieldsJSON) && fieldsJSON[i] != nil {
			out.Hits[i].Fields, out.Hits[i].FieldsJSON = nil, fieldsJSON[i]
		}
		if h.Expl != nil || h.Fragments != nil {
			fields := make(map[string]any, len(h.Fields)+2)
			maps.Copy(fields, out.Hits[i].FieldValues())
			if h.Expl != nil {
				fields[wire.ExplanationField] = h.Expl
			}
			if h.Fragments != nil {
				fields[wire.HighlightField] = map[string][]string(h.Fragments)
			}
			out.Hits[i].Fields, out.Hits[i].FieldsJSON = fields, nil
		}
	}
	return out
}

// IsClosed reports whether err says the replica was closed (a searcher
// retries on the replica that replaced it).
func IsClosed(err error) bool { return errors.Is(err, ErrClosed) }

// withStats puts an index's statistics in a search context, under bleve's
// own key: the live document count, and the fields' token totals as
// bleve's "field cardinality", which bleve divides by the document count
// (rounding up) for BM25's average field length. Statistics without token
// totals (from a broker that predates them) leave the average length the
// shard's own. The document frequencies and the dictionary go through the
// scoped reader (querystats.ScopedQuery).
func withStats(ctx context.Context, gs *GlobalStats) context.Context {
	if gs.FieldTokens == nil {
		return ctx
	}
	return context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{DocCount: float64(gs.DocCount), FieldCardinality: gs.FieldTokens})
}

// checkFresh refuses a search whose statistics miss more of the replica's
// updates than the request allows (wire.CodeStaleStats): the broker
// fetches them again.
func (r *Replica) checkFresh(req *wire.ShardRequest) error {
	if req.MaxStaleUpdates <= 0 {
		return nil
	}
	seq, ok := req.Stats.Seqs[r.cfg.Shard]
	if !ok {
		return nil // statistics from searchers that do not say: no bound
	}
	n, known := r.updates.since(seq)
	switch {
	case !known:
		return api.Errorf(wire.CodeStaleStats, "shard %d: statistics counted at sequence %d, before this replica's history (from %d)", r.cfg.Shard, seq, r.updates.base)
	case n > req.MaxStaleUpdates:
		return api.Errorf(wire.CodeStaleStats, "shard %d: statistics miss %d updates (at most %d)", r.cfg.Shard, n, req.MaxStaleUpdates)
	}
	return nil
}

// Stats runs the statistics phase of a request: which terms of which fields
// the query reads on this shard (its own expansions), their live document
// frequencies, the live document count, those fields' token totals
// (querystats.Count, over the replica's reader), and the stream sequence
// they were counted at.
func (r *Replica) Stats(ctx context.Context, req *wire.ShardRequest) (*GlobalStats, error) {
	q, err := querystats.RequestQuery(req)
	if err != nil {
		return nil, err
	}
	return r.count(req, "statistics", func(reader index.IndexReader, m mapping.IndexMapping) (*GlobalStats, error) {
		return querystats.Count(ctx, q, req.MaxTerms, reader, m, r.cfg.Shard)
	})
}

// Dictionary counts the statistics of every term of field
// req.DictionaryField, at most req.MaxTerms of them
// (querystats.CountDictionary, over the replica's reader), with the
// stream sequence they were counted at.
func (r *Replica) Dictionary(ctx context.Context, req *wire.ShardRequest) (*GlobalStats, error) {
	if req.DictionaryField == "" || req.PIT != "" {
		return nil, api.BadRequest("shard %d: a dictionary's statistics need a field, and read the replica now", r.cfg.Shard)
	}
	return r.count(req, "dictionary", func(reader index.IndexReader, _ mapping.IndexMapping) (*GlobalStats, error) {
		return querystats.CountDictionary(ctx, reader, req.DictionaryField, req.MaxTerms, r.cfg.Shard)
	})
}

// count runs counter over a reader of the index req reads (searchable),
// and adds the replica's generation and the stream sequence the reader
// holds at least; what names the count in errors.
func (r *Replica) count(req *wire.ShardRequest, what string, counter func(index.IndexReader, mapping.IndexMapping) (*GlobalStats, error)) (*GlobalStats, error) {
	// The sequence is read before the reader opens: the reader holds at
	// least this.
	idx, seq, release, err := r.searchable(req)
	if err != nil {
		return nil, err
	}
	defer release()
	adv, err := idx.Advanced()
	if err != nil {
		return nil, fmt.Errorf("shard %d: %s: %w", r.cfg.Shard, what, err)
	}
	reader, err := adv.Reader()
	if err != nil {
		return nil, fmt.Errorf("shard %d: %s: %w", r.cfg.Shard, what, err)
	}
	defer reader.Close()
	out, err := counter(reader, idx.Mapping())
	if err != nil {
		return nil, err
	}
	out.Generation = r.generation.Load()
	out.Seqs = map[int]uint64{r.cfg.Shard: seq}
	return out, nil
}

// searchable returns the index req reads (the replica's, or its point in
// time's), the stream sequence it holds at least, and what to call once
// done with it.
func (r *Replica) searchable(req *wire.ShardRequest) (idx bleve.Index, seq uint64, release func(), err error) {
	if req.PIT != "" {
		idx, seq, err = r.usePIT(req.PIT, time.Duration(req.PITKeepAliveMS)*time.Millisecond)
		return idx, seq, func() {}, err
	}
	if idx, err = r.acquire(); err != nil {
		return nil, 0, nil, err
	}
	return idx, r.Seq(), r.mu.RUnlock, nil
}
