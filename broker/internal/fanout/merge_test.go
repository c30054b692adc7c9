package fanout

import (
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

func TestMerge(t *testing.T) {
	shards := []*wire.ShardResponse{
		{Hits: []api.Hit{{ID: "a", Score: 3}, {ID: "c", Score: 1}, {ID: "e", Score: 0.5}}, Total: 30},
		{Hits: []api.Hit{{ID: "b", Score: 2}, {ID: "d", Score: 1}}, Total: 12},
	}
	cases := []struct {
		name     string
		req      api.SearchRequest
		want     []string
		wantLen0 bool
	}{
		{"by score, ties by id", api.SearchRequest{Size: 10}, []string{"a", "b", "c", "d", "e"}, false},
		{"first page", api.SearchRequest{Size: 2}, []string{"a", "b"}, false},
		{"second page", api.SearchRequest{Size: 2, From: 2}, []string{"c", "d"}, false},
		{"past the end", api.SearchRequest{Size: 2, From: 9}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := &planner.Plan{From: c.req.From, Size: c.req.EffectiveSize()}
			m := Merge(shards, plan)
			page := Page(m.Hits, plan)
			if m.Total != 42 {
				t.Fatalf("total %d", m.Total)
			}
			var got []string
			for _, h := range page {
				got = append(got, h.ID)
			}
			if len(got) != len(c.want) || (c.wantLen0 && page == nil) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestMergeSorted(t *testing.T) {
	shards := []*wire.ShardResponse{
		{Hits: []api.Hit{{ID: "a", SortKeys: []string{"b"}}, {ID: "c", SortKeys: []string{"d"}}}},
		{Hits: []api.Hit{{ID: "b", SortKeys: []string{"a"}}, {ID: "d", SortKeys: []string{"c"}}}},
	}
	plan := &planner.Plan{Size: 10, Sort: []string{"-name"}}
	page := Page(Merge(shards, plan).Hits, plan)
	if len(page) != 4 || page[0].ID != "c" || page[3].ID != "b" {
		t.Fatalf("descending sort: %v", page)
	}
}

// TestShardFacets: on several shards each counts more terms than asked
// (size × 1.5 + 10, the default size 10 when none is given); one shard
// counts what the caller asked.
func TestShardFacets(t *testing.T) {
	facets := map[string]api.FacetRequest{"c": {Field: "cuisine", Size: 4}, "d": {Field: "diet"}}
	one := &planner.Plan{Shards: []int{0}, Facets: facets}
	if got := ShardFacets(one); got["c"].Size != 4 || got["d"].Size != 0 {
		t.Fatalf("one shard: %+v", got)
	}
	three := &planner.Plan{Shards: []int{0, 1, 2}, Facets: facets}
	if got := ShardFacets(three); got["c"].Size != 16 || got["d"].Size != 25 || got["c"].Field != "cuisine" {
		t.Fatalf("three shards: %+v", got)
	}
	if facets["c"].Size != 4 {
		t.Fatal("the plan's facets were changed")
	}
}
