package corpus

import (
	"context"
	"fmt"
	"math"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
)

// The reference of exact scoring's tests (internal/shard and the node package):
// Quarry's BM25 statistics counted a second, independent way, and the
// tolerance scores are compared with.

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
