package shard

import (
	"context"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/quarrysearch/quarry/internal/querystats"
)

// LiveDocFreqs counts, for every term of field in reader (a scorch
// snapshot; ok false for another reader), the live documents that hold
// it: segment by segment, each term's postings less the segment's
// deleted documents, which is what a term's reader counts (scorch's
// dictionary counts deleted documents too). It reads each segment's
// dictionary once and opens no term reader, so a whole dictionary costs a
// fraction of opening a reader and a searcher per term
// (BenchmarkDictionary). Past max distinct terms it stops with ok true
// and over true.
func (c *tokenCache) LiveDocFreqs(ctx context.Context, reader index.IndexReader, field string, max int, visit func(term string, df uint64)) (ok, over bool, err error) {
	snap, isSnap := reader.(*scorch.IndexSnapshot)
	if !isSnap {
		return false, false, nil
	}
	df := map[string]uint64{}
	var pl segment.PostingsList
	for _, ss := range snap.Segments() {
		dict, err := ss.Segment().Dictionary(field)
		if err != nil {
			return true, false, err
		}
		if dict == nil {
			continue
		}
		// The dictionary's own counts are not used: they include deleted
		// documents, and zap's iterator counts a term of many documents
		// that follows one of a single document (written in the
		// dictionary entry itself) as one.
		deleted := ss.Deleted()
		var itr segment.DictionaryIterator
		if oc, ok := dict.(omitCount); ok {
			itr = oc.AutomatonIteratorOmitCount(nil, nil, nil)
		} else {
			itr = dict.AutomatonIterator(nil, nil, nil)
		}
		for read := 0; ; read++ {
			if read%dictionaryStride == 0 {
				if err := ctx.Err(); err != nil {
					return true, false, err
				}
			}
			e, err := itr.Next()
			if err != nil {
				return true, false, err
			}
			if e == nil {
				break
			}
			if pl, err = dict.PostingsList([]byte(e.Term), deleted, pl); err != nil {
				return true, false, err
			}
			n := pl.Count()
			if n == 0 {
				continue
			}
			if _, seen := df[e.Term]; !seen && len(df) >= max {
				return true, true, nil
			}
			df[e.Term] += n
		}
	}
	for t, n := range df {
		visit(t, n)
	}
	return true, false, nil
}

// dictionaryStride is how many terms LiveDocFreqs reads between two looks
// at its context.
const dictionaryStride = 256

var _ querystats.LiveDocFreqs = (*tokenCache)(nil)
