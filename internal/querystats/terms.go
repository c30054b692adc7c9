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
}

// ListTerms returns the terms req's query reads, analysed with m, without
// an index: the statistics phase's recording, run over a reader with no
// documents. ok is false when the terms depend on an index's dictionary
// (fuzzy, prefix, wildcard, regexp, numeric, date and geo ranges,
// synonyms: the reader notes every dictionary read, and refuses fuzzy and
// regexp automata, synonyms and geo shapes), when the query reads
// terms that are not UTF-8 (their fields' statistics stay each shard's
// own), and on any error (the statistics phase reports it).
func ListTerms(ctx context.Context, req *wire.ShardRequest, m mapping.IndexMapping) (*QueryTerms, bool) {
	q, err := RequestQuery(req)
	if err != nil {
		return nil, false
	}
	rec := newRecorder(recordMax(req.MaxTerms))
	var none noDocuments
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

// noDocuments is an index reader with no documents, whose dictionaries are
// empty and noted as read: a query that reads one has terms that depend
// on the index (ListTerms). Of the optional reader interfaces it has
// BM25's field statistic and the dictionary lookups of numeric and geo
// ranges; the statistics reader refuses regexp, fuzzy, synonym and geo
// shape lookups over it.
type noDocuments struct {
	dictionaries bool
}

func (*noDocuments) TermFieldReader(context.Context, []byte, string, bool, bool, bool) (index.TermFieldReader, error) {
	return emptyPostings{}, nil
}
func (*noDocuments) DocIDReaderAll() (index.DocIDReader, error)          { return emptyIDs{}, nil }
func (*noDocuments) DocIDReaderOnly([]string) (index.DocIDReader, error) { return emptyIDs{}, nil }
func (n *noDocuments) FieldDict(string) (index.FieldDict, error) {
	n.dictionaries = true
	return &listDict{}, nil
}
func (n *noDocuments) FieldDictRange(string, []byte, []byte) (index.FieldDict, error) {
	n.dictionaries = true
	return &listDict{}, nil
}
func (n *noDocuments) FieldDictPrefix(string, []byte) (index.FieldDict, error) {
	n.dictionaries = true
	return &listDict{}, nil
}
func (n *noDocuments) FieldDictContains(string) (index.FieldDictContains, error) {
	n.dictionaries = true
	return &listDict{}, nil
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
	_ index.TermFieldReader     = emptyPostings{}
	_ index.DocIDReader         = emptyIDs{}
)
