package node

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/searcher"
)

// exactCases are the query kinds exact distributed scoring must cover.
var exactCases = []struct {
	name string
	req  api.SearchRequest
}{
	{"text", api.SearchRequest{Q: "spicy noodles"}},
	{"match", api.SearchRequest{Query: json.RawMessage(`{"match":"chicken curry","field":"name"}`)}},
	{"term", api.SearchRequest{Query: json.RawMessage(`{"term":"thai","field":"cuisine"}`)}},
	{"phrase", api.SearchRequest{Query: json.RawMessage(`{"match_phrase":"rice noodles","field":"description"}`)}},
	{"boolean", api.SearchRequest{Query: json.RawMessage(`{
		"must":{"conjuncts":[{"match":"chicken","field":"name"}]},
		"should":{"disjuncts":[{"match":"spicy","field":"description"},{"match":"garlic","field":"description"}]},
		"must_not":{"disjuncts":[{"term":"indian","field":"cuisine"}]}}`)}},
	{"filtered", api.SearchRequest{Q: "vegan burger", Filter: json.RawMessage(`{"min":5,"max":15,"field":"price"}`)}},
	{"second page", api.SearchRequest{Q: "pizza", From: 20, Size: 20}},
}

// A query over 4 shards returns the same ids, in the same order, with the
// same scores as the same query over one index holding every document.
func TestExactDistributedScoring(t *testing.T) {
	docs := catalogNDJSON(t, 3000)
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	loadCatalog(t, n, "menu", 4, docs)
	c := n.Client()
	ctx := context.Background()
	single := bleveDirect(t, t.TempDir()+"/one", docs)
	defer single.Close()

	// The same documents scored per shard (no statistics phase) differ:
	// this is what the test guards against. This broker does not join the
	// queue group; the test calls it directly.
	js, _ := jetstream.New(n.Conn())
	store, err := meta.Open(ctx, js, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := broker.New(n.Conn(), store, broker.Config{NoExactScoring: true})
	if err != nil {
		t.Fatal(err)
	}
	plans, _ := planner.New(planner.Config{})
	def, _ := c.Index(ctx, "menu")
	differs := false

	for _, tc := range exactCases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Size == 0 {
				req.Size = 20
			}
			got, err := c.Search(ctx, "menu", &req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Shards.Successful != 4 {
				t.Fatalf("shards: %+v", got.Shards)
			}
			q, err := planner.BuildQuery(&req, api.QuerySettings{})
			if err != nil {
				t.Fatal(err)
			}
			sreq := bleve.NewSearchRequestOptions(q, req.Size, req.From, false)
			sreq.SortBy([]string{"-_score", "_id"})
			want, err := single.Search(sreq)
			if err != nil {
				t.Fatal(err)
			}
			if got.Total != want.Total {
				t.Errorf("total %d, one index %d", got.Total, want.Total)
			}
			if len(got.Hits) != len(want.Hits) || len(got.Hits) == 0 {
				t.Fatalf("%d hits, one index %d", len(got.Hits), len(want.Hits))
			}
			for i := range want.Hits {
				g, w := got.Hits[i], want.Hits[i]
				if g.ID != w.ID || !sameScore(g.Score, w.Score) {
					t.Fatalf("hit %d: %s %.12f, one index %s %.12f", i, g.ID, g.Score, w.ID, w.Score)
				}
			}
			plan, err := plans.Plan(&req, def, nil)
			if err != nil {
				t.Fatal(err)
			}
			lr, err := local.Execute(ctx, plan, false, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for i := range lr.Hits {
				if i < len(want.Hits) && (lr.Hits[i].ID != want.Hits[i].ID || !sameScore(lr.Hits[i].Score, want.Hits[i].Score)) {
					differs = true
				}
			}
		})
	}
	if !differs {
		t.Error("per-shard scoring matched one index on every query: the test data no longer shows the difference")
	}
}

func sameScore(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// TestStatsPhaseTimeout: when a shard does not give its term statistics in
// time, the search still answers, scored with each shard's own statistics,
// and the profile says so. (Partial sums used to reach the shards, which
// then failed with "field stat for bm25 not present".)
func TestStatsPhaseTimeout(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1},
		&searcher.Config{FaultDelay: 2 * time.Second, FaultStats: true}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "slowstats", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "slowstats", ndjson(30, "s"))
	start := time.Now()
	r, err := c.Search(ctx, "slowstats", &api.SearchRequest{Q: "noodles", TimeoutMS: 1000, Profile: true})
	if err != nil || r.Shards.Failed > 0 || r.Total != 10 {
		t.Fatalf("search with slow statistics: %+v %v", r, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the search took %s", took)
	}
	if !slices.ContainsFunc(r.Profile.Stages, func(s api.Stage) bool { return s.Name == "stats" && strings.Contains(s.Detail, "incomplete") }) {
		t.Fatalf("the profile does not say the statistics were incomplete: %+v", r.Profile.Stages)
	}
}
