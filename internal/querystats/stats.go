package querystats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Exact distributed scoring.
//
// Quarry's BM25 is a function of the documents alone, never of how they
// are split into shards or segments: the live document count, each term's
// live document frequency, and per field the average length, the total
// tokens in the field over live documents / live documents (Lucene's
// definition; bleve rounds it up). docs/RATIONALE.md has the formula.
//
// Over N shards each shard knows only its own counts, so a statistics
// phase asks every shard which terms the query reads, with their local
// counts and the token totals of their fields (Replica.Stats, through a
// recording reader: Count); the broker sums them (GlobalStats.Add); the
// search phase scores with the sums: bleve's own search.BM25Stats carries
// the document count and the token totals (as its FieldCardinality), and
// this package's reader hands every term searcher the global document
// frequency, reports the global document count (TF-IDF) and, for fuzzy,
// prefix, wildcard, regexp and range terms, lists the index's dictionary
// (the terms the shards found, with live documents) instead of the
// shard's, so every shard scores the same set of terms.
//
// The reader (Reader) is what internal/shard's bleve index type
// (shard.IndexType: scorch, whose reader counts token totals per segment,
// internal/shard's tokens.go, through a TokenCounter) opens, and a search
// with statistics wraps its query (ScopedQuery) so that the searchers it
// builds read through a reader that holds them: bleve opens its reader
// without the search context, and dictionaries are read without it.

// recorder collects the (field, term) pairs a query reads and their local
// document frequencies, and every field it reads. A term that is not
// UTF-8 (an IP address's bytes; bleve's to_lower makes such terms of
// words with İ or ẞ) is recorded (GlobalStats' JSON carries it
// base64-encoded), and its field marked local: its expansions stay each
// shard's own, as a broker that predates those terms would leave them.
// Past max terms the statistics are marked truncated.
type recorder struct {
	stats  wire.GlobalStats
	count  int
	max    int
	fields map[string]bool
}

func newRecorder(max int) *recorder { return &recorder{max: max, fields: map[string]bool{}} }

func (r *recorder) add(field string, term []byte, n uint64) {
	r.fields[field] = true
	if !utf8.Valid(term) && !slices.Contains(r.stats.Local, field) {
		r.stats.Local = append(r.stats.Local, field)
	}
	if r.stats.DocFreq == nil {
		r.stats.DocFreq = map[string]map[string]uint64{}
	}
	m := r.stats.DocFreq[field]
	if _, ok := m[string(term)]; ok {
		return
	}
	if r.count >= r.max {
		r.stats.Truncated = true
		return
	}
	r.count++
	if m == nil {
		m = map[string]uint64{}
		r.stats.DocFreq[field] = m
	}
	m[string(term)] = n
}

// read builds the query's searchers over sr, which records into r, and
// returns the fields whose token totals the statistics carry: every field
// the query names, whether or not this shard read it (a prefix that
// expands to nothing here still reads the field on another shard, and the
// sums need every shard's tokens), and any other field it read. bleve's
// optimization of an unscored filter (score "none") reads its terms as one
// searcher of field "*", which asks for that field's statistics and
// scores nothing: the caller adds "*".
func (r *recorder) read(ctx context.Context, q query.Query, sr *Reader, m mapping.IndexMapping, maxTerms, shard int) (search.FieldSet, error) {
	ctx = context.WithValue(ctx, search.GetScoringModelCallbackKey,
		search.GetScoringModelCallbackFn(func() string { return index.BM25Scoring }))
	ctx = search.ContextWithTermSearchersCounter(WithTermLimit(ctx, maxTerms))
	s, err := q.Searcher(ctx, sr, m, search.SearcherOptions{})
	if tooMany := TooManyTerms(err, shard, maxTerms); tooMany != nil {
		return nil, tooMany
	}
	if err != nil {
		return nil, api.BadRequest("query: %v", err)
	}
	s.Close()
	if err := ctx.Err(); err != nil { // building the searchers took the time
		return nil, api.Errorf(api.CodeTimeout, "shard %d: statistics: %v", shard, err)
	}
	fields, err := query.ExtractFields(q, m, search.NewFieldSet())
	if err != nil {
		return nil, api.BadRequest("query: %v", err)
	}
	for field := range r.fields {
		fields.AddField(field)
	}
	return fields, nil
}

// maxRecorded bounds the terms the statistics phase records when the
// request sets no max_terms.
const maxRecorded = 1 << 16

// recordMax is how many terms the statistics of a request with max_terms
// maxTerms record: twice its bound, or maxRecorded without one.
func recordMax(maxTerms int) int {
	max := maxRecorded
	if maxTerms > 0 {
		max = 2 * maxTerms
	}
	return max
}

// Count is the statistics phase of query q (a shard request's, with
// max_terms maxTerms) over reader, shard's index reader with mapping m:
// which terms of which fields the query reads on this shard (its own
// expansions), their live document frequencies, the live document count
// and those fields' token totals. The caller (Replica.Stats) adds the
// generation and the stream sequence they were counted at.
func Count(ctx context.Context, q query.Query, maxTerms int, reader index.IndexReader, m mapping.IndexMapping, shard int) (*wire.GlobalStats, error) {
	rec := newRecorder(recordMax(maxTerms))
	sr := scope(reader, nil, rec)
	fields, err := rec.read(ctx, q, sr, m, maxTerms, shard)
	if err != nil {
		return nil, err
	}
	out := &rec.stats
	if err := sr.totals(out, fields, shard); err != nil {
		return nil, err
	}
	return out, nil
}

// totals adds to out the live document count and the token totals of
// fields (and of "*", none), over sr.
func (sr *Reader) totals(out *wire.GlobalStats, fields search.FieldSet, shard int) error {
	var err error
	if out.DocCount, err = sr.DocCount(); err != nil {
		return fmt.Errorf("shard %d: statistics: %w", shard, err)
	}
	out.FieldTokens = make(map[string]int, len(fields)+1)
	out.FieldTokens["*"] = 0
	bleveOwn, _ := sr.IndexReader.(index.BM25Reader)
	out.FieldCardinality = make(map[string]int, len(fields))
	for field := range fields {
		n, err := sr.FieldCardinality(field)
		if err != nil {
			return fmt.Errorf("shard %d: field %q statistics: %w", shard, field, err)
		}
		out.FieldTokens[field] = n
		// For searchers that predate token totals (a rolling upgrade).
		if bleveOwn != nil {
			if out.FieldCardinality[field], err = bleveOwn.FieldCardinality(field); err != nil {
				return fmt.Errorf("shard %d: field %q statistics: %w", shard, field, err)
			}
		}
	}
	return nil
}

// LiveDocFreqs counts a whole dictionary's live document frequencies for
// CountDictionary: internal/shard's, over a scorch snapshot's segments,
// with no term reader opened. ok is false for a reader it does not count;
// over says the field has more than max terms.
type LiveDocFreqs interface {
	LiveDocFreqs(ctx context.Context, reader index.IndexReader, field string, max int, visit func(term string, df uint64)) (ok, over bool, err error)
}

// CountDictionary is the statistics phase of a query that reads every
// term of field, over reader (a shard's, as Count's): each term's live
// document frequency (its postings less deleted documents, as a term
// searcher counts them; the dictionary's own counts include deleted
// documents), those with none left out, the live document count and the
// field's token total, building no searchers. Its reader must be a
// shard's (NewReader, with a TokenCounter that is LiveDocFreqs). Over maxTerms terms (0:
// maxRecorded) it answers api.CodeQueryTooComplex; a term that is not
// UTF-8 marks the field local, as Count does (the broker keeps none of
// its terms).
func CountDictionary(ctx context.Context, reader index.IndexReader, field string, maxTerms, shard int) (*wire.GlobalStats, error) {
	if maxTerms <= 0 {
		maxTerms = maxRecorded
	}
	sr := scope(reader, nil, nil)
	df := map[string]uint64{}
	out := &wire.GlobalStats{DocFreq: map[string]map[string]uint64{field: df}}
	visit := func(term string, n uint64) {
		if !utf8.ValidString(term) && out.Local == nil {
			out.Local = []string{field}
		}
		df[term] = n
	}
	c, ok := sr.tokens.(LiveDocFreqs)
	if !ok {
		return nil, fmt.Errorf("shard %d: dictionary of %q: %w", shard, field, errUnsupported)
	}
	ok, over, err := c.LiveDocFreqs(ctx, sr.IndexReader, field, maxTerms, visit)
	switch {
	case !ok:
		return nil, fmt.Errorf("shard %d: dictionary of %q: %w", shard, field, errUnsupported)
	case ctx.Err() != nil:
		return nil, api.Errorf(api.CodeTimeout, "shard %d: dictionary of %q: %v", shard, field, ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("shard %d: dictionary of %q: %w", shard, field, err)
	case over:
		return nil, api.Errorf(api.CodeQueryTooComplex, "shard %d: the dictionary of %q has more than %d terms", shard, field, maxTerms)
	}
	fields := search.NewFieldSet()
	fields.AddField(field)
	if err := sr.totals(out, fields, shard); err != nil {
		return nil, err
	}
	return out, nil
}

var errUnsupported = errors.New("not supported by the underlying index reader")

// Reader is a shard's index reader. Its FieldCardinality is the
// field's token total over live documents (bleve's BM25 then averages it
// per document). With gs (a search with an index's statistics) it reports
// gs's document count and document frequencies and lists gs's terms as
// the dictionary; with rec (the statistics phase) it records the terms
// read. It forwards every optional reader interface bleve's searchers look
// for.
type Reader struct {
	index.IndexReader
	tokens TokenCounter // nil: not a Quarry shard (FieldCardinality is the reader's own)
	ids    ExternalIDs  // nil: ids are the reader's own
	gs     *wire.GlobalStats
	rec    *recorder
	// lacking, with gs put together by the broker, records a term gs
	// lacks, and its TermFieldReader refuses it (ScopedQuery.strict).
	lacking *lackingTerm

	mu     sync.Mutex
	fields map[string]int        // token totals read so far
	dicts  map[string]globalDict // gs's dictionary per field, sorted

	idOnce sync.Once
	idOf   func(index.IndexInternalID) (string, bool) // ids.Lookup's; nil: none
}

// TokenCounter counts token totals for a Reader: internal/shard's cache
// of per-segment counts of a scorch index.
type TokenCounter interface {
	// LiveTokens returns the tokens of field in the live documents of
	// reader (the Reader's own, unwrapped), and false when reader is not
	// one it counts (FieldCardinality is then the reader's own).
	LiveTokens(reader index.IndexReader, field string) (n uint64, ok bool, err error)
}

// ExternalIDs reads documents' ids for a Reader faster than its index
// reader's ExternalID, which bleve's collector calls for every hit it
// returns (scorch reads the id from the document's stored fields, in the
// mapped file: a few cache misses a hit): internal/shard's columns, which
// hold each document's id of a segment in memory.
type ExternalIDs interface {
	// Lookup returns the ids of reader's documents (the Reader's own,
	// unwrapped) it holds: for a document number, its id and true, or
	// false (the Reader asks reader). nil: none.
	Lookup(reader index.IndexReader) func(index.IndexInternalID) (string, bool)
}

// NewReader returns a shard's reader over r, whose FieldCardinality is
// counted by tokens (a shard's index type opens it).
func NewReader(r index.IndexReader, tokens TokenCounter) *Reader {
	return &Reader{IndexReader: r, tokens: tokens}
}

// WithIDs makes r read documents' ids from ids where it holds them, and
// returns r.
func (r *Reader) WithIDs(ids ExternalIDs) *Reader {
	r.ids = ids
	return r
}

// ExternalID is the id of the document numbered id: from the Reader's
// ExternalIDs when they hold it (asked once a Reader, a search), or
// from the index reader.
func (r *Reader) ExternalID(id index.IndexInternalID) (string, error) {
	if r.ids != nil {
		r.idOnce.Do(func() { r.idOf = r.ids.Lookup(r.IndexReader) })
		if r.idOf != nil {
			if s, ok := r.idOf(id); ok {
				return s, nil
			}
		}
	}
	return r.IndexReader.ExternalID(id)
}

// scope returns a reader over i's index that scores with gs and records
// into rec (either may be nil).
func scope(i index.IndexReader, gs *wire.GlobalStats, rec *recorder) *Reader {
	if sr, ok := i.(*Reader); ok {
		return &Reader{IndexReader: sr.IndexReader, tokens: sr.tokens, ids: sr.ids, gs: gs, rec: rec}
	}
	return &Reader{IndexReader: i, gs: gs, rec: rec}
}

// ScopedQuery builds its query's searchers over a reader holding the
// index's statistics (bleve passes the reader it opened itself). With
// strict (statistics the broker put together), a term they lack stops
// the search, and lacking says which.
type ScopedQuery struct {
	query.Query
	gs      *wire.GlobalStats
	strict  bool
	lacking lackingTerm
}

// NewScopedQuery wraps q so that its searchers score with gs; strict
// (statistics the broker put together) refuses a term gs lacks (Lacks).
func NewScopedQuery(q query.Query, gs *wire.GlobalStats, strict bool) *ScopedQuery {
	return &ScopedQuery{Query: q, gs: gs, strict: strict}
}

// lackingTerm is the first term a search read that its statistics lack.
type lackingTerm struct {
	mu          sync.Mutex
	field, term string
}

func (l *lackingTerm) note(field string, term []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.field == "" {
		l.field, l.term = field, string(term)
	}
}

// get returns the first lacking term's field and term ("" when none).
func (l *lackingTerm) get() (field, term string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.field, l.term
}

// errLacksTerm stops a search whose put-together statistics lack a term
// it reads (ScopedQuery.strict).
var errLacksTerm = errors.New("the statistics lack a term the query reads")

// Lacks turns a strict search's failure for want of a term or a field's
// token total in its put-together statistics into wire.CodeStaleStats (the
// broker then counts the query's own), and returns nil for any other (and
// for a nil q: a search without statistics).
func (q *ScopedQuery) Lacks(shard int, err error) error {
	if q == nil || !q.strict {
		return nil
	}
	if field, term := q.lacking.get(); field != "" {
		return api.Errorf(wire.CodeStaleStats, "shard %d: the statistics lack term %q of field %q", shard, term, field)
	}
	// bleve's words when search.BM25Stats has no token total for a field.
	if strings.Contains(err.Error(), "field stat for bm25 not present") {
		return api.Errorf(wire.CodeStaleStats, "shard %d: the statistics lack a field's token total", shard)
	}
	return nil
}

// Searcher builds the wrapped query's searchers over a scoped reader.
func (q *ScopedQuery) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	sr := scope(i, q.gs, nil)
	if q.strict {
		sr.lacking = &q.lacking
	}
	return q.Query.Searcher(ctx, sr, m, options)
}

// TermFieldReader reads a term's postings, with gs's document frequency
// as their count (refusing a term gs lacks when strict: lacking), and
// records the term into rec.
func (r *Reader) TermFieldReader(ctx context.Context, term []byte, field string, includeFreq, includeNorm, includeTermVectors bool) (index.TermFieldReader, error) {
	var df uint64
	global := false
	if r.gs != nil {
		df, global = r.gs.DocFreq[field][string(term)]
		if !global && r.lacking != nil && !r.gs.Truncated && !slices.Contains(r.gs.Local, field) {
			r.lacking.note(field, term)
			return nil, errLacksTerm
		}
	}
	tfr, err := r.IndexReader.TermFieldReader(ctx, term, field, includeFreq, includeNorm, includeTermVectors)
	if err != nil {
		return tfr, err
	}
	if r.rec != nil {
		r.rec.add(field, term, tfr.Count())
	}
	if global {
		return &globalCountReader{TermFieldReader: tfr, count: df}, nil
	}
	return tfr, nil
}

// globalCountReader reports the index-wide document frequency of its term.
type globalCountReader struct {
	index.TermFieldReader
	count uint64
}

func (g *globalCountReader) Count() uint64 { return g.count }

// Optimize forwards to scorch's reader, so that bleve's optimizations of
// unscored filters and of conjunctions still apply (they do not change
// scores).
func (g *globalCountReader) Optimize(kind string, octx index.OptimizableContext) (index.OptimizableContext, error) {
	if o, ok := g.TermFieldReader.(index.Optimizable); ok {
		return o.Optimize(kind, octx)
	}
	return nil, nil
}

// DocCount is the index's live document count in a search with its
// statistics (TF-IDF scoring reads it), the shard's otherwise.
func (r *Reader) DocCount() (uint64, error) {
	if r.gs != nil {
		return r.gs.DocCount, nil
	}
	return r.IndexReader.DocCount()
}

// FieldCardinality is, for a Quarry shard, the number of tokens of field
// in live documents (bleve divides it by the document count for BM25's
// average field length); for another reader, that reader's own.
func (r *Reader) FieldCardinality(field string) (int, error) {
	if r.tokens == nil {
		return r.ownFieldCardinality(field)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.fields[field]; ok {
		return n, nil
	}
	n, counted, err := r.tokens.LiveTokens(r.IndexReader, field)
	if err != nil {
		return 0, err
	}
	if !counted {
		return r.ownFieldCardinality(field)
	}
	if r.fields == nil {
		r.fields = map[string]int{}
	}
	r.fields[field] = int(n)
	return int(n), nil
}

// ownFieldCardinality is the wrapped reader's own field cardinality.
func (r *Reader) ownFieldCardinality(field string) (int, error) {
	if b, ok := r.IndexReader.(index.BM25Reader); ok {
		return b.FieldCardinality(field)
	}
	return 0, fmt.Errorf("field cardinality: %w", errUnsupported)
}

// globalDict is the index's dictionary of a field for one query: the
// terms of gs.DocFreq with live documents, sorted as scorch sorts them.
type globalDict struct {
	terms []string
	df    []uint64
}

// dict returns gs's dictionary of field, and false when the field's
// dictionary must stay the shard's own: no statistics, not all of the
// field's terms could be recorded, or statistics without token totals
// (from a broker or a searcher that predates them, which may have dropped
// Local and Truncated).
func (r *Reader) dict(field string) (globalDict, bool) {
	if r.gs == nil || r.gs.FieldTokens == nil || r.gs.Truncated || slices.Contains(r.gs.Local, field) {
		return globalDict{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.dicts[field]; ok {
		return d, true
	}
	var d globalDict
	for t, n := range r.gs.DocFreq[field] {
		if n > 0 {
			d.terms = append(d.terms, t)
		}
	}
	slices.Sort(d.terms)
	d.df = make([]uint64, len(d.terms))
	for i, t := range d.terms {
		d.df[i] = r.gs.DocFreq[field][t]
	}
	if r.dicts == nil {
		r.dicts = map[string]globalDict{}
	}
	r.dicts[field] = d
	return d, true
}

// list returns the entries of d whose terms keep says to.
func (d globalDict) list(keep func(term string) (bool, uint8)) *listDict {
	out := &listDict{}
	for i, t := range d.terms {
		if ok, dist := keep(t); ok {
			out.entries = append(out.entries, index.DictEntry{Term: t, Count: d.df[i], EditDistance: dist})
		}
	}
	return out
}

// listDict is a dictionary from a list.
type listDict struct {
	entries []index.DictEntry
	next    int
}

func (l *listDict) Next() (*index.DictEntry, error) {
	if l.next >= len(l.entries) {
		return nil, nil
	}
	l.next++
	return &l.entries[l.next-1], nil
}

func (l *listDict) Close() error      { return nil }
func (l *listDict) Cardinality() int  { return len(l.entries) }
func (l *listDict) BytesRead() uint64 { return 0 }

// Contains is FieldDictContains on the list.
func (l *listDict) Contains(key []byte) (bool, error) {
	_, ok := slices.BinarySearchFunc(l.entries, string(key), func(e index.DictEntry, t string) int { return strings.Compare(e.Term, t) })
	return ok, nil
}

func all(string) (bool, uint8) { return true, 0 }

// FieldDict is the index's dictionary of field with statistics, the
// shard's otherwise (dict).
func (r *Reader) FieldDict(field string) (index.FieldDict, error) {
	if d, ok := r.dict(field); ok {
		return d.list(all), nil
	}
	return r.IndexReader.FieldDict(field)
}

// FieldDictRange includes start and end as scorch does: from start, up to
// end with its last byte incremented, exclusive (so "ab" also takes
// "abz"); an empty bound is no bound.
func (r *Reader) FieldDictRange(field string, start, end []byte) (index.FieldDict, error) {
	d, ok := r.dict(field)
	if !ok {
		return r.IndexReader.FieldDictRange(field, start, end)
	}
	endExcl := exclusiveEnd(end)
	return d.list(func(t string) (bool, uint8) {
		return t >= string(start) && (len(endExcl) == 0 || t < string(endExcl)), 0
	}), nil
}

// exclusiveEnd is scorch's calculateExclusiveEndFromInclusiveEnd.
func exclusiveEnd(end []byte) []byte {
	if len(end) == 0 {
		return nil
	}
	out := slices.Clone(end)
	if out[len(out)-1] < 0xff {
		out[len(out)-1]++
	} else {
		out = append(out, 0)
	}
	return out
}

// FieldDictPrefix lists the terms with prefix of the index's dictionary
// with statistics (dict), of the shard's otherwise.
func (r *Reader) FieldDictPrefix(field string, prefix []byte) (index.FieldDict, error) {
	d, ok := r.dict(field)
	if !ok {
		return r.IndexReader.FieldDictPrefix(field, prefix)
	}
	return d.list(func(t string) (bool, uint8) { return strings.HasPrefix(t, string(prefix)), 0 }), nil
}

// FieldDictContains looks terms up in the index's dictionary with
// statistics (dict), in the shard's otherwise.
func (r *Reader) FieldDictContains(field string) (index.FieldDictContains, error) {
	if d, ok := r.dict(field); ok {
		return d.list(all), nil
	}
	if x, ok := r.IndexReader.(index.IndexReaderContains); ok {
		return x.FieldDictContains(field)
	}
	return nil, errUnsupported
}

// FieldDictRegexp is FieldDictRegexpAutomaton's dictionary.
func (r *Reader) FieldDictRegexp(field, regex string) (index.FieldDict, error) {
	fd, _, err := r.FieldDictRegexpAutomaton(field, regex)
	return fd, err
}

// FieldDictRegexpAutomaton takes scorch's automaton for regex (the shard's
// own dictionary is closed unread) and, with statistics, matches it against
// the index's dictionary.
func (r *Reader) FieldDictRegexpAutomaton(field, regex string) (index.FieldDict, index.RegexAutomaton, error) {
	x, ok := r.IndexReader.(index.IndexReaderRegexp)
	if !ok {
		return nil, nil, errUnsupported
	}
	fd, a, err := x.FieldDictRegexpAutomaton(field, regex)
	if err != nil || a == nil {
		return fd, a, err
	}
	fd, err = r.indexDict(field, fd, func(t string) (bool, uint8) { return a.MatchesRegex(t), 0 })
	return fd, a, err
}

// FieldDictFuzzy is FieldDictFuzzyAutomaton's dictionary.
func (r *Reader) FieldDictFuzzy(field, term string, fuzziness int, prefix string) (index.FieldDict, error) {
	fd, _, err := r.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
	return fd, err
}

// FieldDictFuzzyAutomaton matches term's Levenshtein automaton, from the
// process's cache (levAutomaton), against the index's dictionary (with
// statistics: gs's) or the shard's (its segments', walked by the shard's
// FuzzyDicts),
// with each term's edit distance (its boost in bleve's fuzzy searcher).
func (r *Reader) FieldDictFuzzyAutomaton(field, term string, fuzziness int, prefix string) (index.FieldDict, index.FuzzyAutomaton, error) {
	x, ok := r.IndexReader.(index.IndexReaderFuzzy)
	if !ok {
		return nil, nil, errUnsupported
	}
	if d, ok := r.dict(field); ok {
		a, err := levAutomaton(term, fuzziness)
		if err != nil {
			return nil, nil, err
		}
		return d.list(func(t string) (bool, uint8) {
			if !strings.HasPrefix(t, prefix) {
				return false, 0
			}
			return a.MatchAndDistance(t)
		}), a, nil
	}
	if fw, ok := r.tokens.(FuzzyDicts); ok {
		a, err := levAutomaton(term, fuzziness)
		if err != nil {
			return nil, nil, err
		}
		if fd, ok, err := fw.FuzzyDict(r.IndexReader, field, a, prefix); ok || err != nil {
			return fd, a, err
		}
	}
	return x.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
}

// indexDict is, with statistics for field, the index's dictionary matched
// by match in place of the shard's own fd (closed unread); without, fd.
func (r *Reader) indexDict(field string, fd index.FieldDict, match func(string) (bool, uint8)) (index.FieldDict, error) {
	d, ok := r.dict(field)
	if !ok {
		return fd, nil
	}
	if err := fd.Close(); err != nil {
		return nil, err
	}
	return d.list(match), nil
}

// GetSpatialAnalyzerPlugin forwards to the wrapped reader.
func (r *Reader) GetSpatialAnalyzerPlugin(typ string) (index.SpatialAnalyzerPlugin, error) {
	if x, ok := r.IndexReader.(index.SpatialIndexPlugin); ok {
		return x.GetSpatialAnalyzerPlugin(typ)
	}
	return nil, errUnsupported
}

// ThesaurusTermReader forwards to the wrapped reader.
func (r *Reader) ThesaurusTermReader(ctx context.Context, name string, term []byte) (index.ThesaurusTermReader, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusTermReader(ctx, name, term)
	}
	return nil, errUnsupported
}

// ThesaurusKeys forwards to the wrapped reader.
func (r *Reader) ThesaurusKeys(name string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeys(name)
	}
	return nil, errUnsupported
}

// ThesaurusKeysFuzzy forwards to the wrapped reader.
func (r *Reader) ThesaurusKeysFuzzy(name, term string, fuzziness int, prefix string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysFuzzy(name, term, fuzziness, prefix)
	}
	return nil, errUnsupported
}

// ThesaurusKeysRegexp forwards to the wrapped reader.
func (r *Reader) ThesaurusKeysRegexp(name, regex string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysRegexp(name, regex)
	}
	return nil, errUnsupported
}

// ThesaurusKeysPrefix forwards to the wrapped reader.
func (r *Reader) ThesaurusKeysPrefix(name string, prefix []byte) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysPrefix(name, prefix)
	}
	return nil, errUnsupported
}

// Ancestors forwards to the wrapped reader.
func (r *Reader) Ancestors(id index.IndexInternalID, prealloc []index.AncestorID) ([]index.AncestorID, error) {
	if x, ok := r.IndexReader.(index.NestedReader); ok {
		return x.Ancestors(id, prealloc)
	}
	return nil, errUnsupported
}

// Interfaces bleve's searchers look for on a reader; TestReaderInterfaces
// checks scorch's reader and the wrapper agree.
var (
	_ index.BM25Reader          = (*Reader)(nil)
	_ index.IndexReaderRegexp   = (*Reader)(nil)
	_ index.IndexReaderFuzzy    = (*Reader)(nil)
	_ index.IndexReaderContains = (*Reader)(nil)
	_ index.FieldDictContains   = (*listDict)(nil)
	_ index.FieldDict           = (*listDict)(nil)
	_ index.SpatialIndexPlugin  = (*Reader)(nil)
	_ index.ThesaurusReader     = (*Reader)(nil)
	_ index.NestedReader        = (*Reader)(nil)
)
