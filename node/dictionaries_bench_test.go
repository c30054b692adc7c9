package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkNewQueries measures queries the broker has not seen, on two
// nodes side by side, request by request in alternating order: one keeps
// the whole dictionaries of the fields queries read (the default), one
// only the terms earlier queries read (--stats-dictionary-terms -1). The
// demo's 20,000 items in 4 shards each, the bench's query fields; two
// words of the catalogue's dish names a query, one in five with a letter
// dropped (typo tolerance's default takes it). Every query is asked once
// of each node, so no query's own statistics are cached: what differs is
// the statistics round trip.
//
//	go test -run XXX -bench NewQueries -benchtime 3000x -count 3 ./node/
func BenchmarkNewQueries(b *testing.B) {
	docs := catalogNDJSON(b, 20000)
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}}}
	nodes := []struct {
		name string
		n    *Node
	}{
		{"dictionaries", startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})},
		{"terms", startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{StatsDictionaryTerms: -1})},
	}
	ctx := context.Background()
	for _, nd := range nodes {
		c := nd.n.Client()
		if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "menu", Shards: 4, Mapping: catalog.Mapping(), Query: qs}); err != nil {
			b.Fatal(err)
		}
		mustBulk(b, c, "menu", bytes.NewBuffer(docs))
		waitDocs(b, nd.n, 20000)
	}
	queries := newQueries(b, docs, b.N+400)
	search := func(nd int, q string) time.Duration {
		start := time.Now()
		if _, err := nodes[nd].n.Client().Search(ctx, "menu", &api.SearchRequest{Q: q}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, q := range queries[b.N:] { // the table filled, the dictionaries counted
		search(0, q)
		search(1, q)
	}
	lat := make([][]time.Duration, len(nodes))
	b.ResetTimer()
	for i, q := range queries[:b.N] {
		first := i % 2
		lat[first] = append(lat[first], search(first, q))
		lat[1-first] = append(lat[1-first], search(1-first, q))
	}
	b.StopTimer()
	for i, nd := range nodes {
		slices.Sort(lat[i])
		b.ReportMetric(float64(lat[i][len(lat[i])/2].Microseconds()), "p50-µs-"+nd.name)
		b.ReportMetric(float64(lat[i][len(lat[i])*99/100].Microseconds()), "p99-µs-"+nd.name)
	}
}

// newQueries makes n distinct queries of two words of the catalogue's
// dish names, one in five with a letter dropped from its first word.
func newQueries(tb testing.TB, docs []byte, n int) []string {
	tb.Helper()
	seen := map[string]bool{}
	var words []string
	for line := range bytes.Lines(docs) {
		var d struct{ Name string }
		if err := json.Unmarshal(line, &d); err != nil {
			tb.Fatal(err)
		}
		for _, w := range strings.Fields(strings.ToLower(d.Name)) {
			if len(w) >= 4 && !seen[w] && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	if len(words) < 100 {
		tb.Fatalf("%d words in the dish names", len(words))
	}
	out := make([]string, 0, n)
	asked := map[string]bool{}
	for i := 0; len(out) < n; i++ {
		a, c := words[(i*7)%len(words)], words[(i*13+i/len(words))%len(words)]
		if i%5 == 0 {
			a = a[:len(a)/2] + a[len(a)/2+1:]
		}
		q := fmt.Sprintf("%s %s", a, c)
		if a != c && !asked[q] {
			asked[q] = true
			out = append(out, q)
		}
		if i > 100*n {
			tb.Fatalf("only %d distinct queries", len(out))
		}
	}
	return out
}
