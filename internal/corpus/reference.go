package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/internal/indexmap"
)

// The reference of exact scoring's tests (internal/shard and the node package):
// Quarry's BM25 statistics counted a second, independent way, and the
// tolerance scores are compared with.

// ReferenceIndex builds, in dir, a plain scorch index of docs (bleve's
// own reader, none of Quarry's), each under its "id", with the mapping
// raw as Quarry builds it: what a test compares a shard's or Quarry's
// searchers with. The caller closes it.
func ReferenceIndex(dir string, raw json.RawMessage, docs []map[string]any) (*mapping.IndexMappingImpl, bleve.Index, error) {
	m, err := indexmap.Build(raw)
	if err != nil {
		return nil, nil, err
	}
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, nil, err
	}
	b := idx.NewBatch()
	for i, d := range docs {
		id, ok := d["id"].(string)
		if !ok {
			idx.Close()
			return nil, nil, fmt.Errorf("document %d has no string id", i)
		}
		if err := b.Index(id, d); err != nil {
			idx.Close()
			return nil, nil, err
		}
	}
	if err := idx.Batch(b); err != nil {
		idx.Close()
		return nil, nil, err
	}
	return m, idx, nil
}

// PostingsStats counts BM25 statistics from the postings of idx through
// bleve's public reader: the live documents, and per field (every field
// when fields is empty) the sum of every term's frequency over live
// documents. It shares no code with Quarry's own counting
// (internal/shard), which is what a test compares it with.
func PostingsStats(idx bleve.Index, fields ...string) (*search.BM25Stats, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	docs, err := r.DocCount()
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		if fields, err = r.Fields(); err != nil {
			return nil, err
		}
	}
	out := &search.BM25Stats{DocCount: float64(docs), FieldCardinality: map[string]int{}}
	for _, f := range fields {
		d, err := r.FieldDict(f)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f, err)
		}
		var terms []string
		for de, err := d.Next(); de != nil || err != nil; de, err = d.Next() {
			if err != nil {
				d.Close()
				return nil, fmt.Errorf("field %q: %w", f, err)
			}
			terms = append(terms, de.Term)
		}
		d.Close()
		total := 0
		for _, term := range terms {
			tfr, err := r.TermFieldReader(context.Background(), []byte(term), f, true, false, false)
			if err != nil {
				return nil, fmt.Errorf("field %q, term %q: %w", f, term, err)
			}
			for p, err := tfr.Next(nil); p != nil || err != nil; p, err = tfr.Next(nil) {
				if err != nil {
					tfr.Close()
					return nil, fmt.Errorf("field %q, term %q: %w", f, term, err)
				}
				total += int(p.Freq)
			}
			tfr.Close()
		}
		out.FieldCardinality[f] = total
	}
	// bleve's optimization of an unscored filter reads its terms as one
	// searcher of field "*", which asks for statistics and scores nothing.
	out.FieldCardinality["*"] = 0
	return out, nil
}

// SameScore reports whether a score is the reference's: within a relative
// 1e-9 (floating-point sums in another order may differ in the last bits).
func SameScore(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}
