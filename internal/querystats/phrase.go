package querystats

import (
	"context"
	"math"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// A phrase of one word is a common query: the planner adds the whole text
// as a phrase on every field (api.QuerySettings.PhraseBoost), and a
// search of one word makes a phrase of it. bleve runs it as any phrase: a
// conjunction of its terms' searchers, then, for every document that
// holds them, a map of every term's locations (DocumentMatch.Complete)
// and a walk of its paths. For one word, that walk only asks whether the
// term has a location in the document, which its term searcher already
// says (the locations it read, DocumentMatch.FieldTermLocations), and the
// maps were most of the cost: a third of the searchers' CPU on the demo
// pipeline's queries whose misspelt word the spelling plugin corrects
// (docs/performance.md, "A phrase of one word").
//
// onePhrases puts onePhrase in place of each match_phrase query of q that
// bleve would run that way (Searcher decides, as it analyses the text
// with the field's analyser), in the disjunctions, conjunctions and
// boolean queries q is made of. It changes q in place: q was just parsed
// and is not yet shared. A nil query (a boolean query's absent clause)
// stays nil.
func onePhrases(q query.Query) query.Query {
	switch q := q.(type) {
	case *query.MatchPhraseQuery:
		if q != nil {
			return &onePhrase{MatchPhraseQuery: q}
		}
	case *query.DisjunctionQuery:
		if q == nil {
			break
		}
		for i, d := range q.Disjuncts {
			q.Disjuncts[i] = onePhrases(d)
		}
	case *query.ConjunctionQuery:
		if q == nil {
			break
		}
		for i, c := range q.Conjuncts {
			q.Conjuncts[i] = onePhrases(c)
		}
	case *query.BooleanQuery:
		if q == nil {
			break
		}
		q.Must = onePhrases(q.Must)
		q.Should = onePhrases(q.Should)
		q.MustNot = onePhrases(q.MustNot)
		q.Filter = onePhrases(q.Filter)
	}
	return q
}

// onePhrase is a match_phrase query that, when its text analyses to one
// term and it allows no typos, is searched by that term's searcher with
// term locations, a document matching when the term has a location in
// it: what bleve's phrase searcher finds and scores for one term (the
// conjunction of one searcher scores as that searcher; its query norm is
// set the same way), without the maps. Any other phrase, and a search
// that explains its scores (whose explanation shows bleve's conjunction),
// is bleve's own. It marshals as the match_phrase query it wraps.
type onePhrase struct {
	*query.MatchPhraseQuery
}

// Searcher builds the one term's searcher, or bleve's phrase searcher.
func (q *onePhrase) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	term, field, ok := q.oneTerm(ctx, m, options)
	if !ok {
		return q.MatchPhraseQuery.Searcher(ctx, i, m, options)
	}
	options.IncludeTermVectors = true // as bleve's phrase searcher asks
	ts, err := searcher.NewTermSearcher(ctx, i, term, field, q.BoostVal.Value(), options)
	if err != nil {
		return nil, err
	}
	// bleve's phrase searcher sets its norm at once, as if it were the
	// whole query; a disjunction or conjunction above sets its own later.
	ts.SetQueryNorm(1 / math.Sqrt(ts.Weight()))
	return &onePhraseSearcher{Searcher: ts}, nil
}

// oneTerm is the one term q's text analyses to on its field, when bleve
// would search q as a phrase of that term alone with no typos and no
// synonyms, and the search explains no scores.
func (q *onePhrase) oneTerm(ctx context.Context, m mapping.IndexMapping, options search.SearcherOptions) (term, field string, ok bool) {
	plain := *q.MatchPhraseQuery
	plain.SetAutoFuzziness(false) // autoFuzzy is unexported: compare
	if options.Explain || q.Fuzziness != 0 || plain != *q.MatchPhraseQuery {
		return "", "", false
	}
	field = q.FieldVal
	if field == "" {
		field = m.DefaultSearchField()
	}
	if ctx != nil {
		if fts, ok := ctx.Value(search.FieldTermSynonymMapKey).(search.FieldTermSynonymMap); ok && fts[field] != nil {
			return "", "", false
		}
	}
	name := q.Analyzer
	if name == "" {
		name = m.AnalyzerNameForPath(field)
	}
	a := m.AnalyzerNamed(name)
	if a == nil {
		return "", "", false // bleve's searcher says so
	}
	tokens := a.Analyze([]byte(q.MatchPhrase))
	if len(tokens) != 1 || len(tokens[0].Term) == 0 {
		return "", "", false // no term, or a phrase of several
	}
	return string(tokens[0].Term), field, true
}

// onePhraseSearcher is a term searcher reading the term's locations,
// passing on only the documents where it has one (a field indexed
// without locations has none, and bleve's phrase then matches nothing).
type onePhraseSearcher struct {
	search.Searcher
}

// Next is the next document where the term has a location.
func (s *onePhraseSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for {
		dm, err := s.Searcher.Next(ctx)
		if err != nil || dm == nil || len(dm.FieldTermLocations) > 0 {
			return dm, err
		}
		ctx.DocumentMatchPool.Put(dm)
	}
}

// Advance is the first document at or after id where the term has a
// location.
func (s *onePhraseSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Advance(ctx, id)
	if err != nil || dm == nil || len(dm.FieldTermLocations) > 0 {
		return dm, err
	}
	ctx.DocumentMatchPool.Put(dm)
	return s.Next(ctx)
}

// Min is 0, as for bleve's phrase searcher.
func (s *onePhraseSearcher) Min() int { return 0 }

// DocumentMatchPoolSize is the term searcher's, and one more, as for
// bleve's phrase searcher.
func (s *onePhraseSearcher) DocumentMatchPoolSize() int {
	return s.Searcher.DocumentMatchPoolSize() + 1
}
