package querystats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/internal/wire"
)

// QueryTerms are what a query reads, found from the index's mapping alone:
// the terms its searchers open, per field, and the fields whose token
// totals its scores need (GlobalStats.FieldTokens' keys). Two shards of
// one index read the same terms for such a query, so its statistics can
// be put together from the statistics of earlier queries that read the
// same terms (the broker's statistics cache).
type QueryTerms struct {
	Terms  map[string][]string // field → terms, each once
	Fields []string            // sorted
	// Dictionaries are the fields whose whole dictionary (ListTerms'
	// dicts) the query's expansions were listed from, sorted: its
	// statistics are only as fresh as that dictionary.
	Dictionaries []string
}

// Dictionaries are whole dictionaries of some of an index's fields, each
// sorted as scorch sorts terms (bytewise), with every term a live
// document holds: the broker's complete fields. Over them ListTerms lists
// what fuzzy, prefix and term-range queries on those fields expand to.
type Dictionaries map[string][]string

// ListTerms returns the terms req's query reads, analysed with m, without
// an index: the statistics phase's recording, run over a reader with no
// documents. ok is false when the terms depend on a dictionary dicts
// lacks (fuzzy, prefix, term ranges on a field not in dicts; wildcard,
// regexp, numeric, date and geo ranges, synonyms: the reader notes every
// dictionary read, and refuses regexp automata, synonyms and geo shapes),
// when the query reads terms that are not UTF-8 (their fields'
// statistics stay each shard's own), and on any error (the statistics
// phase reports it).
func ListTerms(ctx context.Context, req *wire.ShardRequest, m mapping.IndexMapping, dicts Dictionaries) (*QueryTerms, bool) {
	q, err := RequestQuery(req)
	if err != nil {
		return nil, false
	}
	rec := newRecorder(recordMax(req.MaxTerms))
	none := noDocuments{dicts: dicts}
	fields, err := listRead(ctx, rec, q, scope(&none, nil, rec), m, req.MaxTerms)
	if err != nil || none.dictionaries || rec.stats.Truncated || len(rec.stats.Local) > 0 {
		return nil, false
	}
	qt := &QueryTerms{Terms: make(map[string][]string, len(rec.stats.DocFreq))}
	for field, terms := range rec.stats.DocFreq {
		qt.Terms[field] = slices.Collect(maps.Keys(terms))
	}
	fields.AddField("*")
	qt.Fields = slices.Sorted(maps.Keys(fields))
	if len(none.read) > 0 {
		qt.Dictionaries = slices.Sorted(maps.Keys(none.read))
	}
	return qt, true
}

// listRead is rec.read over noDocuments, where bleve may meet what no
// index gives it: a panic is a query whose terms are not listed.
func listRead(ctx context.Context, rec *recorder, q query.Query, sr *Reader, m mapping.IndexMapping, maxTerms int) (fields search.FieldSet, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("list terms: %v", p)
		}
	}()
	return rec.read(ctx, q, sr, m, maxTerms, 0)
}

// errNoDocuments answers what an index with no documents cannot.
var errNoDocuments = errors.New("no documents")

// noDocuments is an index reader with no documents, whose dictionaries
// are dicts' (read noted in read), or empty and noted as read: a query
// that reads one has terms that depend on the index (ListTerms). Of the
// optional reader interfaces it has BM25's field statistic, the
// dictionary lookups of numeric and geo ranges and fuzzy automata; the
// statistics reader refuses regexp, synonym and geo shape lookups over
// it.
type noDocuments struct {
	dicts        Dictionaries
	dictionaries bool            // a dictionary dicts lacks was read
	read         map[string]bool // fields of dicts read
}

// terms returns field's dictionary, noting it read; false when dicts
// lacks it (noted too).
func (n *noDocuments) terms(field string) ([]string, bool) {
	d, ok := n.dicts[field]
	if !ok {
		n.dictionaries = true
		return nil, false
	}
	if n.read == nil {
		n.read = map[string]bool{}
	}
	n.read[field] = true
	return d, true
}

// between lists the terms of field's dictionary from lo on, before hi
// (nil: no bound), that keep says to (nil: every one).
func (n *noDocuments) between(field string, lo, hi []byte, keep func(string) (bool, uint8)) *listDict {
	out := &listDict{}
	d, ok := n.terms(field)
	if !ok {
		return out
	}
	i, _ := slices.BinarySearch(d, string(lo))
	for ; i < len(d) && (hi == nil || d[i] < string(hi)); i++ {
		if keep == nil {
			out.entries = append(out.entries, index.DictEntry{Term: d[i]})
		} else if ok, dist := keep(d[i]); ok {
			out.entries = append(out.entries, index.DictEntry{Term: d[i], EditDistance: dist})
		}
	}
	return out
}

func (*noDocuments) TermFieldReader(context.Context, []byte, string, bool, bool, bool) (index.TermFieldReader, error) {
	return emptyPostings{}, nil
}
func (*noDocuments) DocIDReaderAll() (index.DocIDReader, error)          { return emptyIDs{}, nil }
func (*noDocuments) DocIDReaderOnly([]string) (index.DocIDReader, error) { return emptyIDs{}, nil }
func (n *noDocuments) FieldDict(field string) (index.FieldDict, error) {
	return n.between(field, nil, nil, nil), nil
}

// FieldDictRange includes start and end as scorch does (Reader's).
func (n *noDocuments) FieldDictRange(field string, start, end []byte) (index.FieldDict, error) {
	return n.between(field, start, exclusiveEnd(end), nil), nil
}
func (n *noDocuments) FieldDictPrefix(field string, prefix []byte) (index.FieldDict, error) {
	return n.between(field, prefix, PrefixEnd(prefix), nil), nil
}
func (n *noDocuments) FieldDictContains(field string) (index.FieldDictContains, error) {
	return n.between(field, nil, nil, nil), nil
}
func (n *noDocuments) FieldDictFuzzy(field, term string, fuzziness int, prefix string) (index.FieldDict, error) {
	fd, _, err := n.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
	return fd, err
}

// FieldDictFuzzyAutomaton matches term's automaton (the process's cache)
// against the terms of field's dictionary that start with prefix.
func (n *noDocuments) FieldDictFuzzyAutomaton(field, term string, fuzziness int, prefix string) (index.FieldDict, index.FuzzyAutomaton, error) {
	if _, ok := n.terms(field); !ok {
		return nil, nil, errUnsupported // not listed: no automaton built
	}
	a, err := levAutomaton(term, fuzziness)
	if err != nil {
		return nil, nil, err
	}
	return n.between(field, []byte(prefix), PrefixEnd([]byte(prefix)), a.MatchAndDistance), a, nil
}

// PrefixEnd is the first key after every key starting with prefix (nil:
// none), as scorch computes it.
func PrefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (*noDocuments) Document(string) (index.Document, error) { return nil, nil }
func (*noDocuments) DocValueReader([]string) (index.DocValueReader, error) {
	return nil, errNoDocuments
}
func (*noDocuments) Fields() ([]string, error)                        { return nil, nil }
func (*noDocuments) GetInternal([]byte) ([]byte, error)               { return nil, nil }
func (*noDocuments) DocCount() (uint64, error)                        { return 0, nil }
func (*noDocuments) ExternalID(index.IndexInternalID) (string, error) { return "", errNoDocuments }
func (*noDocuments) InternalID(string) (index.IndexInternalID, error) { return nil, nil }
func (*noDocuments) Close() error                                     { return nil }
func (*noDocuments) FieldCardinality(string) (int, error)             { return 0, nil }

// emptyPostings is a term's postings, with none.
type emptyPostings struct{}

func (emptyPostings) Next(*index.TermFieldDoc) (*index.TermFieldDoc, error) { return nil, nil }
func (emptyPostings) Advance(index.IndexInternalID, *index.TermFieldDoc) (*index.TermFieldDoc, error) {
	return nil, nil
}
func (emptyPostings) Count() uint64 { return 0 }
func (emptyPostings) Close() error  { return nil }
func (emptyPostings) Size() int     { return 0 }

// emptyIDs is a list of documents with none (bleve's match-all and
// document-id searchers).
type emptyIDs struct{}

func (emptyIDs) Next() (index.IndexInternalID, error)                         { return nil, nil }
func (emptyIDs) Advance(index.IndexInternalID) (index.IndexInternalID, error) { return nil, nil }
func (emptyIDs) Close() error                                                 { return nil }
func (emptyIDs) Size() int                                                    { return 0 }

var (
	_ index.IndexReader         = (*noDocuments)(nil)
	_ index.BM25Reader          = (*noDocuments)(nil)
	_ index.IndexReaderContains = (*noDocuments)(nil)
	_ index.IndexReaderFuzzy    = (*noDocuments)(nil)
	_ index.TermFieldReader     = emptyPostings{}
	_ index.DocIDReader         = emptyIDs{}
)
