package fanout

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// defaultFacetSize is a facet's size when the request gives none.
const defaultFacetSize = 10

// ShardFacets are the facets each shard counts: on an index of several
// shards, more terms than the caller asked for (size × 1.5 + 10, as
// Elasticsearch's shard_size), so that a term just outside one shard's
// top terms is still counted there and the merged top terms and counts
// are right in all but skewed cases; Merge keeps the caller's size.
func ShardFacets(p *planner.Plan) map[string]api.FacetRequest {
	if len(p.Shards) < 2 || len(p.Facets) == 0 {
		return p.Facets
	}
	out := make(map[string]api.FacetRequest, len(p.Facets))
	for name, f := range p.Facets {
		if !f.IsRange() { // a range facet counts every range anyway
			f.Size = cmp.Or(f.Size, defaultFacetSize)
			f.Size += f.Size/2 + 10
		}
		out[name] = f
	}
	return out
}

// ShardSuggest is the suggestions each shard finds (wire.Suggest), nil
// when the plan asks for none: on an index of several shards, more than
// the caller asked for, as ShardFacets, so that the merged top words and
// counts are right in all but skewed cases; Merge keeps the caller's
// size.
func ShardSuggest(p *planner.Plan) *wire.Suggest {
	if p.Suggest == nil {
		return nil
	}
	size := p.Suggest.EffectiveSize()
	if len(p.Shards) > 1 {
		size += size/2 + 10
	}
	return &wire.Suggest{Field: p.Suggest.Field, Text: p.SuggestText, Size: size, Typos: p.Suggest.Typos, Scan: cmp.Or(p.MaxTerms, api.DefaultSuggestScan)}
}

// Merged is the shards' search responses put together.
type Merged struct {
	// Total is the sum of the shards' totals.
	Total uint64
	// Facets are the shards' facets merged, each cut to the size the
	// plan asks for; nil when no shard counted any.
	Facets map[string]api.FacetResult
	// Hits are every shard's hits in one order: by score, descending,
	// ties by id (so results are deterministic), or by their encoded
	// sort values (api.Hit.SortKeys) when the plan sorts.
	Hits []api.Hit
}

// Merge combines shard responses: totals summed, facets merged and every
// hit in one order (a k-way merge by score or sort values). Page then
// cuts the from/size window; the page's sort values are the caller's to
// decode.
func Merge(shards []*wire.ShardResponse, plan *planner.Plan) Merged {
	var m Merged
	var facets map[string]*facetSum
	for _, s := range shards {
		m.Total += s.Total
		m.Hits = append(m.Hits, s.Hits...)
		for name, f := range s.Facets {
			if facets == nil {
				facets = map[string]*facetSum{}
			}
			if facets[name] == nil {
				facets[name] = &facetSum{terms: map[string]int{}}
			}
			facets[name].add(f)
		}
	}
	if facets != nil {
		m.Facets = make(map[string]api.FacetResult, len(facets))
		for name, f := range facets {
			req := plan.Facets[name]
			if name == wire.SuggestFacet && plan.Suggest != nil {
				req = api.FacetRequest{Size: plan.Suggest.EffectiveSize()}
			}
			m.Facets[name] = f.cut(req)
		}
	}
	slices.SortFunc(m.Hits, order(plan))
	return m
}

// order is the merge's order of two hits: by score, descending, ties by
// id, or by their encoded sort values (the plan's sort ends with "_id":
// a total order). Every shard returns its hits in this order.
func order(plan *planner.Plan) func(a, b api.Hit) int {
	desc := sortDescending(plan.Sort)
	return func(a, b api.Hit) int {
		if len(plan.Sort) > 0 {
			for i := range min(len(a.SortKeys), len(b.SortKeys), len(desc)) {
				var c int
				if SortField(plan.Sort[i]) == "_score" {
					c = cmp.Compare(a.Score, b.Score)
				} else {
					c = cmp.Compare(a.SortKeys[i], b.SortKeys[i])
				}
				if desc[i] {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
		} else if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	}
}

// Deeper returns the positions (in plan.Shards) of the shards whose
// first round (plan.ShardK hits asked of each) may have left out hits of
// the merged top plan.K, given the shards' results (those with no
// decoded Resp failed) and the first round merged (Merge's Hits): none
// when ShardK is K already.
// A shard may have left some out when it returned every hit it was
// asked for and either fewer than K were merged or its last hit ranks
// above the merged K-th. Its hits not returned rank below its last, so
// otherwise below the K-th: every other shard holds none of the top K it
// did not return.
func Deeper(results []Result, merged []api.Hit, plan *planner.Plan) []int {
	if plan.ShardK >= plan.K {
		return nil
	}
	cmp := order(plan)
	var out []int
	for i, r := range results {
		if r.Resp != nil && needsMore(r.Resp, merged, plan, cmp) {
			out = append(out, i)
		}
	}
	return out
}

// needsMore is Deeper's test of one shard's reply, cmp the merge's order.
func needsMore(sr *wire.ShardResponse, merged []api.Hit, plan *planner.Plan, cmp func(a, b api.Hit) int) bool {
	n := len(sr.Hits)
	if n < plan.ShardK || n == 0 {
		return false
	}
	if len(merged) < plan.K {
		return true
	}
	return cmp(sr.Hits[n-1], merged[plan.K-1]) < 0
}

// facetSum is one facet's shard counts added up (as bleve's
// search.FacetResult.Merge, then Fixup).
type facetSum struct {
	f      api.FacetResult
	terms  map[string]int // term -> its index in f.Terms
	ranges map[string]int // a range facet's counts by range name
}

// add adds a shard's counts: totals, missing and other summed, each
// term's count summed.
func (s *facetSum) add(f api.FacetResult) {
	s.f.Field = cmp.Or(s.f.Field, f.Field)
	s.f.Total += f.Total
	s.f.Missing += f.Missing
	s.f.Other += f.Other
	for _, t := range f.Terms {
		if i, ok := s.terms[t.Term]; ok {
			s.f.Terms[i].Count += t.Count
			continue
		}
		s.terms[t.Term] = len(s.f.Terms)
		s.f.Terms = append(s.f.Terms, t)
	}
	for _, r := range f.Ranges {
		if s.ranges == nil {
			s.ranges = map[string]int{}
		}
		s.ranges[r.Name] += r.Count
	}
}

// cut returns the sum with its terms ordered by count, most first, ties
// by term, size of them kept and the rest counted in Other; a range
// facet's counts (req's ranges) in the order it asked for them, every
// one, none cut.
func (s *facetSum) cut(req api.FacetRequest) api.FacetResult {
	f := s.f
	if ranges := req.EffectiveDateRanges(); ranges != nil {
		f.Terms = nil
		f.Ranges = make([]api.RangeCount, len(ranges))
		for i, r := range ranges {
			from, to := r.Bounds()
			rc := api.RangeCount{Name: r.Name, Count: s.ranges[r.Name]}
			if r.From != "" {
				rc.FromDate = from.UTC().Format(time.RFC3339Nano)
			}
			if r.To != "" {
				rc.ToDate = to.UTC().Format(time.RFC3339Nano)
			}
			f.Ranges[i] = rc
		}
		return f
	}
	if ranges := req.EffectiveRanges(); ranges != nil {
		f.Terms = nil
		f.Ranges = make([]api.RangeCount, len(ranges))
		for i, r := range ranges {
			f.Ranges[i] = api.RangeCount{Name: r.Name, From: r.From, To: r.To, Count: s.ranges[r.Name]}
		}
		return f
	}
	size := cmp.Or(req.Size, defaultFacetSize)
	slices.SortFunc(f.Terms, func(a, b api.TermCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Term, b.Term)
	})
	if len(f.Terms) > size {
		for _, t := range f.Terms[size:] {
			f.Other += t.Count
		}
		f.Terms = f.Terms[:size:size]
	}
	return f
}

// Page returns the plan's from/size window of hits (empty, not nil, past
// the end).
func Page(hits []api.Hit, plan *planner.Plan) []api.Hit {
	from := min(plan.From, len(hits))
	end := min(from+plan.Size, len(hits))
	page := hits[from:end]
	if page == nil {
		page = []api.Hit{}
	}
	return page
}

// sortDescending reports, per sort key, whether it orders descending: a
// "-" prefix, as in bleve ("+" or nothing: ascending).
func sortDescending(keys []string) []bool {
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = strings.HasPrefix(k, "-")
	}
	return out
}

// SortField is a sort entry ("-price") without its direction prefix: the
// field, "_score" or "_id".
func SortField(k string) string { return strings.TrimLeft(k, "+-") }
