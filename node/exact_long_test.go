//go:build long

package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// The same documents (a generated corpus: a Zipf vocabulary of thousands
// of words, titles of 2-12 words, bodies of 5-90) in indexes of 1, 2, 4
// and 7 shards give the reference's ids, order and scores for every query
// kind: after updates and deletes, after forced segment merges, after a
// generation swap, and, within the freshness bound, after 10% more
// documents. bleve's own statistics on the reference give other scores,
// so the test guards something. 700 documents (with 100 more words a
// document than the catalogue's); -quarry.long: 20,000.
func TestExactScoringCorpus(t *testing.T) {
	size := 700
	if testtier.Soak {
		size = 20000
	}
	s, all, cases := startCorpus(t, size, []int{1, 2, 4, 7}, &broker.Config{})
	n, ctx := s.n, context.Background()

	// Updates (new text under existing ids) and deletes: the searchers'
	// segments hold the old versions as deleted documents.
	var put []map[string]any
	for i := 0; i < size; i += 13 {
		d := s.g.Next().Record()
		d["id"] = all[i]["id"]
		put = append(put, d)
	}
	var del []string
	for i := 5; i < size; i += 50 {
		del = append(del, all[i]["id"].(string))
	}
	s.write(t, put, del, false)

	// Guard: bleve's own statistics give other results on most queries.
	differ := 0
	for _, tc := range cases {
		req := tc.req
		req.Size = max(req.Size, 20)
		want := refSearch(t, s.ref, s.stats, req, 0)
		own := refSearch(t, s.ref, nil, req, 0)
		if hitsDiffer(apiHits(own.Hits), want.Hits, 0) != "" {
			differ++
		}
	}
	t.Logf("bleve's own statistics differ from the reference on %d of %d queries", differ, len(cases))
	if differ < len(cases)/2 {
		t.Errorf("bleve's own statistics differ from the reference on only %d of %d queries", differ, len(cases))
	}

	s.check(t, "updated", cases)

	for _, shards := range s.counts {
		if err := n.Searcher.ForceMerge(ctx, indexName(shards)); err != nil {
			t.Fatal(err)
		}
	}
	s.check(t, "merged", cases)

	for _, shards := range s.counts {
		index := indexName(shards)
		m, err := n.Indexer.SnapshotIndex(ctx, index, slices.Max(slices.Collect(maps.Values(s.last[index]))))
		if err != nil {
			t.Fatal(err)
		}
		testwait.UntilErr(t, time.Minute, fmt.Sprintf("%s: generation %d swapped in", index, m.Generation), func() error {
			swapped := 0
			for _, st := range n.Searcher.Stats() {
				if st.Index == index && st.Generation >= m.Generation && st.Seq >= s.last[index][st.Shard] {
					swapped++
				}
			}
			if swapped < shards {
				return fmt.Errorf("%+v", n.Searcher.Stats())
			}
			return nil
		})
	}
	s.check(t, "swapped", cases)
}
