package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/quarrysearch/quarry/internal/wire"
)

// A parsed query is shared by every search of the same JSON
// (querystats.RequestQuery): searches of each kind of query, at once, from
// many goroutines (with -race: bleve must only read a query) give the
// answers the first one gave; a bad query is refused each time.
func TestParsedQueriesShared(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 300)
	r := loadReplicas(t, 1, mapping, docs)[0]
	ctx := context.Background()
	queries := []string{
		`{"match":"chicken curry","field":"name"}`,
		`{"match":"chiken","field":"name","fuzziness":1}`,
		`{"match_phrase":"fresh basil","field":"description"}`,
		`{"prefix":"chi","field":"name"}`,
		`{"query":"+name:chicken -cuisine:indian"}`,
		`{"must":{"conjuncts":[{"match":"rice","field":"description"}]},"should":{"disjuncts":[{"term":"thai","field":"cuisine"},{"term":"spicy","field":"tags"}]}}`,
		`{"min":5,"max":15,"field":"price"}`,
	}
	want := make([]*wire.ShardResponse, len(queries))
	for i, q := range queries {
		var err error
		if want[i], err = r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(q), K: 20, Fields: []string{"name"}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 30 {
				i := (g + n) % len(queries)
				req := &wire.ShardRequest{Query: json.RawMessage(queries[i]), K: 20, Fields: []string{"name"}}
				if n%2 == 1 {
					st, err := r.Stats(ctx, req)
					if err != nil {
						errs <- err
						return
					}
					req.Stats = st
				}
				got, err := r.Search(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if len(got.Hits) != len(want[i].Hits) || got.Total != want[i].Total || !reflect.DeepEqual(got.Hits[0].Fields, want[i].Hits[0].Fields) {
					errs <- fmt.Errorf("%s: %d hits, total %d; first time %d, %d", queries[i], len(got.Hits), got.Total, len(want[i].Hits), want[i].Total)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(`{"no_such_query":1}`), K: 1}); err == nil {
			t.Fatal("a bad query was taken")
		}
	}
}
