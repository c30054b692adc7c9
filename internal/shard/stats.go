package shard

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/internal/wire"
)

// Exact distributed scoring.
//
// BM25 scores a term with the index's document count, the field's average
// length and the term's document frequency. Over N shards each shard knows
// only its own, so the same query scores differently than on one index.
// bleve's own global scoring (an alias with search.GlobalScoring) makes the
// first two global but leaves document frequency local. Quarry carries all
// three: a stats phase asks every shard which terms the query reads and
// their local counts (Recorder), the broker sums them (GlobalStats), and the
// search phase puts them in the search context, where this package's index
// wrapper hands them to bleve's term scorer in place of the local counts.
//
// The wrapper is registered as bleve index type IndexType: scorch with a
// reader whose TermFieldReader consults the context. Everything else is
// scorch's.

// IndexType is the bleve index type of Quarry shards.
const IndexType = "quarry-scorch"

func init() {
	if err := registry.RegisterIndexType(IndexType, newStatsIndex); err != nil {
		panic(err)
	}
}

// GlobalStats is wire.GlobalStats: the BM25 statistics of a whole index.
type GlobalStats = wire.GlobalStats

type ctxKey int

const (
	globalStatsKey ctxKey = iota
	recorderKey
)

// WithGlobalStats makes searches under ctx score with s instead of the
// shard's local statistics.
func WithGlobalStats(ctx context.Context, s *GlobalStats) context.Context {
	return context.WithValue(ctx, globalStatsKey, s)
}

// recorder collects the (field, term) pairs a query reads and their local
// document frequencies. Binary terms (numeric and geo encodings) and terms
// past maxRecordedTerms (wide fuzzy or prefix expansions) are left out and
// keep their local frequencies: exact scoring covers text terms.
type recorder struct {
	stats GlobalStats
	n     int
}

const maxRecordedTerms = 4096

func (r *recorder) add(field string, term []byte, n uint64) {
	if r.n >= maxRecordedTerms || !utf8.Valid(term) {
		return
	}
	r.n++
	if r.stats.DocFreq == nil {
		r.stats.DocFreq = map[string]map[string]uint64{}
	}
	m := r.stats.DocFreq[field]
	if m == nil {
		m = map[string]uint64{}
		r.stats.DocFreq[field] = m
	}
	m[string(term)] = n
}

// statsIndex is scorch with a statistics-aware reader.
type statsIndex struct {
	index.Index
}

func newStatsIndex(storeName string, config map[string]any, q *index.AnalysisQueue) (index.Index, error) {
	i, err := scorch.NewScorch(storeName, config, q)
	if err != nil {
		return nil, err
	}
	return &statsIndex{Index: i}, nil
}

// Reader wraps scorch's reader.
func (s *statsIndex) Reader() (index.IndexReader, error) {
	r, err := s.Index.Reader()
	if err != nil {
		return nil, err
	}
	return &statsReader{IndexReader: r}, nil
}

// CopyReader keeps bleve's online copy (snapshots) working.
func (s *statsIndex) CopyReader() index.CopyReader {
	return s.Index.(index.CopyIndex).CopyReader()
}

// FireIndexEvent forwards to scorch.
func (s *statsIndex) FireIndexEvent() {
	if e, ok := s.Index.(index.EventIndex); ok {
		e.FireIndexEvent()
	}
}

var errUnsupported = errors.New("not supported by the underlying index reader")

// statsReader substitutes global document frequencies, and records local
// ones, according to the search context. It forwards every optional reader
// interface bleve's searchers look for.
type statsReader struct {
	index.IndexReader
}

func (r *statsReader) TermFieldReader(ctx context.Context, term []byte, field string, includeFreq, includeNorm, includeTermVectors bool) (index.TermFieldReader, error) {
	tfr, err := r.IndexReader.TermFieldReader(ctx, term, field, includeFreq, includeNorm, includeTermVectors)
	if err != nil || ctx == nil {
		return tfr, err
	}
	if rec, ok := ctx.Value(recorderKey).(*recorder); ok {
		rec.add(field, term, tfr.Count())
	}
	if gs, ok := ctx.Value(globalStatsKey).(*GlobalStats); ok {
		if df, ok := gs.DocFreq[field][string(term)]; ok {
			return &globalCountReader{TermFieldReader: tfr, count: df}, nil
		}
	}
	return tfr, nil
}

// globalCountReader reports the index-wide document frequency of its term.
type globalCountReader struct {
	index.TermFieldReader
	count uint64
}

func (g *globalCountReader) Count() uint64 { return g.count }

func (r *statsReader) FieldCardinality(field string) (int, error) {
	if b, ok := r.IndexReader.(index.BM25Reader); ok {
		return b.FieldCardinality(field)
	}
	return 0, fmt.Errorf("field cardinality: %w", errUnsupported)
}

func (r *statsReader) FieldDictRegexp(field, regex string) (index.FieldDict, error) {
	if x, ok := r.IndexReader.(index.IndexReaderRegexp); ok {
		return x.FieldDictRegexp(field, regex)
	}
	return nil, errUnsupported
}

func (r *statsReader) FieldDictRegexpAutomaton(field, regex string) (index.FieldDict, index.RegexAutomaton, error) {
	if x, ok := r.IndexReader.(index.IndexReaderRegexp); ok {
		return x.FieldDictRegexpAutomaton(field, regex)
	}
	return nil, nil, errUnsupported
}

func (r *statsReader) FieldDictFuzzy(field, term string, fuzziness int, prefix string) (index.FieldDict, error) {
	if x, ok := r.IndexReader.(index.IndexReaderFuzzy); ok {
		return x.FieldDictFuzzy(field, term, fuzziness, prefix)
	}
	return nil, errUnsupported
}

func (r *statsReader) FieldDictFuzzyAutomaton(field, term string, fuzziness int, prefix string) (index.FieldDict, index.FuzzyAutomaton, error) {
	if x, ok := r.IndexReader.(index.IndexReaderFuzzy); ok {
		return x.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
	}
	return nil, nil, errUnsupported
}

func (r *statsReader) FieldDictContains(field string) (index.FieldDictContains, error) {
	if x, ok := r.IndexReader.(index.IndexReaderContains); ok {
		return x.FieldDictContains(field)
	}
	return nil, errUnsupported
}

func (r *statsReader) GetSpatialAnalyzerPlugin(typ string) (index.SpatialAnalyzerPlugin, error) {
	if x, ok := r.IndexReader.(index.SpatialIndexPlugin); ok {
		return x.GetSpatialAnalyzerPlugin(typ)
	}
	return nil, errUnsupported
}

func (r *statsReader) ThesaurusTermReader(ctx context.Context, name string, term []byte) (index.ThesaurusTermReader, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusTermReader(ctx, name, term)
	}
	return nil, errUnsupported
}

func (r *statsReader) ThesaurusKeys(name string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeys(name)
	}
	return nil, errUnsupported
}

func (r *statsReader) ThesaurusKeysFuzzy(name, term string, fuzziness int, prefix string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysFuzzy(name, term, fuzziness, prefix)
	}
	return nil, errUnsupported
}

func (r *statsReader) ThesaurusKeysRegexp(name, regex string) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysRegexp(name, regex)
	}
	return nil, errUnsupported
}

func (r *statsReader) ThesaurusKeysPrefix(name string, prefix []byte) (index.ThesaurusKeys, error) {
	if x, ok := r.IndexReader.(index.ThesaurusReader); ok {
		return x.ThesaurusKeysPrefix(name, prefix)
	}
	return nil, errUnsupported
}

func (r *statsReader) Ancestors(id index.IndexInternalID, prealloc []index.AncestorID) ([]index.AncestorID, error) {
	if x, ok := r.IndexReader.(index.NestedReader); ok {
		return x.Ancestors(id, prealloc)
	}
	return nil, errUnsupported
}

// Interfaces bleve's searchers look for on a reader; TestReaderInterfaces
// checks scorch's reader and the wrapper agree.
var (
	_ index.BM25Reader          = (*statsReader)(nil)
	_ index.IndexReaderRegexp   = (*statsReader)(nil)
	_ index.IndexReaderFuzzy    = (*statsReader)(nil)
	_ index.IndexReaderContains = (*statsReader)(nil)
	_ index.SpatialIndexPlugin  = (*statsReader)(nil)
	_ index.ThesaurusReader     = (*statsReader)(nil)
	_ index.NestedReader        = (*statsReader)(nil)
	_ index.CopyIndex           = (*statsIndex)(nil)
)
