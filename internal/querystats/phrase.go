package querystats

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// Phrases are common queries: the planner adds the whole text as a
// phrase on every field (api.QuerySettings.PhraseBoost). bleve runs a
// phrase as a conjunction of its terms' searchers, then, for every
// document that holds them all, builds a map of every term's locations
// (DocumentMatch.Complete: two levels of maps and a copy of every
// location, per document) and walks it for the phrase's paths. The maps
// were most of the cost: a phrase of one word cost 8 times its term's
// search, and phrases a fifth of the searchers' CPU under the demo
// pipeline (docs/RATIONALE.md, "Phrases without bleve's maps").
//
// exactPhrases puts exactPhrase in place of each match_phrase query of q
// (Searcher decides, as it analyses the text with the field's analyser,
// whether its own searchers run), in the disjunctions, conjunctions and
// boolean queries q is made of. It changes q in place: q was just parsed
// and is not yet shared. A nil query (a boolean query's absent clause)
// stays nil.
func exactPhrases(q query.Query) query.Query {
	switch q := q.(type) {
	case *query.MatchPhraseQuery:
		if q != nil {
			return &exactPhrase{MatchPhraseQuery: q}
		}
	case *query.DisjunctionQuery:
		if q == nil {
			break
		}
		for i, d := range q.Disjuncts {
			q.Disjuncts[i] = exactPhrases(d)
		}
	case *query.ConjunctionQuery:
		if q == nil {
			break
		}
		for i, c := range q.Conjuncts {
			q.Conjuncts[i] = exactPhrases(c)
		}
	case *query.BooleanQuery:
		if q == nil {
			break
		}
		q.Must = exactPhrases(q.Must)
		q.Should = exactPhrases(q.Should)
		q.MustNot = exactPhrases(q.MustNot)
		q.Filter = exactPhrases(q.Filter)
	}
	return q
}

// exactPhrase is a match_phrase query which, when it allows no typos and
// its text analyses to one term at each position, is searched without
// bleve's maps (phraseSearcher): one word by its term searcher reading
// the term's locations, several by bleve's conjunction of their term
// searchers, and a check of their locations in place. Both find, score
// and locate what bleve's phrase searcher does (the same searchers score, with the query norm set the
// same way; TestExactPhrase). Any other phrase, and a search that
// explains its scores (whose explanation shows bleve's searchers), is
// bleve's own. It marshals as the match_phrase query it wraps.
type exactPhrase struct {
	*query.MatchPhraseQuery
}

// Searcher builds the phrase's searcher: Quarry's, or bleve's.
func (q *exactPhrase) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	terms, field, ok := q.terms(ctx, m, options)
	if !ok {
		return q.MatchPhraseQuery.Searcher(ctx, i, m, options)
	}
	options.IncludeTermVectors = true // as bleve's phrase searcher asks
	boost := q.BoostVal.Value()
	var each []search.Searcher
	closeAll := func() {
		for _, s := range each {
			_ = s.Close()
		}
	}
	for _, t := range terms {
		if t == "" {
			continue // a word the analyser dropped: any word may stand there
		}
		ts, err := searcher.NewTermSearcher(ctx, i, t, field, boost, options)
		if err != nil {
			closeAll()
			return nil, err
		}
		each = append(each, ts)
	}
	// One word is its term searcher: bleve's conjunction of one scores
	// as the searcher in it.
	must := each[0]
	if len(each) > 1 {
		var err error
		if must, err = searcher.NewConjunctionSearcher(ctx, i, each, options); err != nil {
			closeAll()
			return nil, err
		}
	}
	// The norm as bleve's phrase searcher sets it when it is made, as if
	// it were the whole query; a disjunction or conjunction above sets its
	// own later.
	must.SetQueryNorm(1 / math.Sqrt(must.Weight()))
	return &phraseSearcher{Searcher: must, terms: terms, at: make([]int, len(terms))}, nil
}

// terms are the phrase's terms, one a position ("" where the analyser
// left a position empty: a stop word), and its field, when bleve would
// search q as a phrase of exactly those terms with no typos and no
// synonyms, and the search explains no scores.
func (q *exactPhrase) terms(ctx context.Context, m mapping.IndexMapping, options search.SearcherOptions) (terms []string, field string, ok bool) {
	plain := *q.MatchPhraseQuery
	plain.SetAutoFuzziness(false) // autoFuzzy is unexported: compare
	if options.Explain || q.Fuzziness != 0 || plain != *q.MatchPhraseQuery {
		return nil, "", false
	}
	field = q.FieldVal
	if field == "" {
		field = m.DefaultSearchField()
	}
	if ctx != nil {
		if fts, ok := ctx.Value(search.FieldTermSynonymMapKey).(search.FieldTermSynonymMap); ok && fts[field] != nil {
			return nil, "", false
		}
	}
	name := q.Analyzer
	if name == "" {
		name = m.AnalyzerNameForPath(field)
	}
	a := m.AnalyzerNamed(name)
	if a == nil {
		return nil, "", false // bleve's searcher says so
	}
	tokens := a.Analyze([]byte(q.MatchPhrase))
	if len(tokens) == 0 {
		return nil, "", false
	}
	// As bleve's tokenStreamToPhrase: positions from the first.
	first, last := tokens[0].Position, tokens[0].Position
	for _, t := range tokens {
		first, last = min(first, t.Position), max(last, t.Position)
	}
	terms = make([]string, last-first+1)
	for _, t := range tokens {
		p := t.Position - first
		if terms[p] != "" || len(t.Term) == 0 {
			return nil, "", false // two terms at a position, or an empty one
		}
		terms[p] = string(t.Term)
	}
	return terms, field, true
}

// phraseSearcher passes on the documents of its searcher (the one
// word's term searcher, or the conjunction of every term of the phrase)
// where the phrase stands: the one word has a location there (a field
// indexed without locations has none, and bleve's phrase then matches
// nothing); several stand one after the other, each at the position
// after the one before (a position left empty skipped), in the same
// field and the same value of a list. Its scratch slices live as long as
// the searcher (one search), so checking a document allocates nothing
// once they have grown; they grow to the document's locations of the
// phrase's terms, which the conjunction's match already holds.
type phraseSearcher struct {
	search.Searcher          // the term searcher, or the conjunction
	terms           []string // by position; "" for an empty one
	locs            []phraseLoc
	at              []int // for each position, the index in locs of its term's location
	paths           []search.FieldTermLocation
}

// phraseLoc is one location of one of the phrase's terms in a document.
type phraseLoc struct {
	field string // the field it was read from: one of those _all holds
	ap    search.ArrayPositions
	pos   uint64
	term  int // the term's first position in the phrase
	ftl   int // index in the document's FieldTermLocations
}

// Next is the next document where the phrase stands.
func (s *phraseSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for {
		dm, err := s.Searcher.Next(ctx)
		if err != nil || dm == nil || s.stands(dm) {
			return dm, err
		}
		ctx.DocumentMatchPool.Put(dm)
	}
}

// Advance is the first document at or after id where the phrase stands.
func (s *phraseSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Advance(ctx, id)
	if err != nil || dm == nil || s.stands(dm) {
		return dm, err
	}
	ctx.DocumentMatchPool.Put(dm)
	return s.Next(ctx)
}

// Min is 0, as for bleve's phrase searcher.
func (s *phraseSearcher) Min() int { return 0 }

// DocumentMatchPoolSize is its searcher's, and one more, as for bleve's
// phrase searcher.
func (s *phraseSearcher) DocumentMatchPoolSize() int {
	return s.Searcher.DocumentMatchPoolSize() + 1
}

// stands reports whether the phrase stands in dm, leaving in
// dm.FieldTermLocations the locations of each place it stands, as
// bleve's phrase searcher does. A place is in one field (_all's
// locations name the field each was read from) and one value of a list.
// The locations are sorted by field, value, position and term, so a
// place's terms follow its first: n log n in the document's locations of
// the phrase's terms, where bleve walks every pair of two terms'
// locations.
func (s *phraseSearcher) stands(dm *search.DocumentMatch) bool {
	if len(s.terms) == 1 { // every location of the word is a place
		return len(dm.FieldTermLocations) > 0
	}
	s.locs = s.locs[:0]
	for i, ftl := range dm.FieldTermLocations {
		if t := slices.Index(s.terms, ftl.Term); t >= 0 {
			s.locs = append(s.locs, phraseLoc{field: ftl.Field, ap: ftl.Location.ArrayPositions, pos: ftl.Location.Pos, term: t, ftl: i})
		}
	}
	slices.SortFunc(s.locs, func(a, b phraseLoc) int {
		if c := cmp.Compare(a.field, b.field); c != 0 {
			return c
		}
		if c := a.ap.Compare(b.ap); c != 0 {
			return c
		}
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(a.term, b.term)
	})
	s.paths = s.paths[:0]
	n := uint64(len(s.terms))
	for i, l := range s.locs {
		if l.term != 0 {
			continue
		}
		if i > 0 && s.locs[i-1].term == 0 && s.locs[i-1].pos == l.pos && s.locs[i-1].field == l.field && s.locs[i-1].ap.Equals(l.ap) {
			continue // the same location again (the term twice in the phrase)
		}
		for k := range s.at {
			s.at[k] = -1
		}
		s.at[0] = i
		for j := i + 1; j < len(s.locs); j++ {
			o := s.locs[j]
			if o.pos >= l.pos+n || o.field != l.field || !o.ap.Equals(l.ap) {
				break
			}
			// Is o the phrase's term at its distance from the start?
			// (The same word may stand at several positions: o.term is
			// the first.)
			if k := int(o.pos - l.pos); k > 0 && s.terms[k] == s.terms[o.term] && s.at[k] < 0 {
				s.at[k] = j
			}
		}
		whole := true
		for k, t := range s.terms {
			if t != "" && s.at[k] < 0 {
				whole = false
				break
			}
		}
		if !whole {
			continue
		}
		for k, t := range s.terms {
			if t != "" {
				s.paths = append(s.paths, dm.FieldTermLocations[s.locs[s.at[k]].ftl])
			}
		}
	}
	if len(s.paths) == 0 {
		return false
	}
	dm.FieldTermLocations = append(dm.FieldTermLocations[:0], s.paths...)
	return true
}
