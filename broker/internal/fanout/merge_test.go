package fanout

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/search"
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

// TestMergeFacetsAsBleve: shards' term facets merge and cut exactly as
// bleve's own FacetResults.Merge and Fixup would (what the broker called
// before the shard protocol carried Quarry's form), over random shards.
func TestMergeFacetsAsBleve(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		nShards := 1 + rng.IntN(5)
		size := 1 + rng.IntN(6)
		plan := &planner.Plan{Facets: map[string]api.FacetRequest{"f": {Field: "cuisine", Size: size}}}
		var shards []*wire.ShardResponse
		bleveMerged := search.FacetResults{}
		for range nShards {
			fr := api.FacetResult{Field: "cuisine", Total: rng.IntN(100), Missing: rng.IntN(5), Other: rng.IntN(5)}
			bf := &search.FacetResult{Field: "cuisine", Total: fr.Total, Missing: fr.Missing, Other: fr.Other, Terms: &search.TermFacets{}}
			for _, term := range rng.Perm(8)[:rng.IntN(8)] {
				tc := api.TermCount{Term: fmt.Sprintf("t%d", term), Count: 1 + rng.IntN(4)}
				fr.Terms = append(fr.Terms, tc)
				bf.Terms.Add(&search.TermFacet{Term: tc.Term, Count: tc.Count})
			}
			shards = append(shards, &wire.ShardResponse{Facets: map[string]api.FacetResult{"f": fr}})
			bleveMerged.Merge(search.FacetResults{"f": bf})
		}
		bleveMerged.Fixup("f", size)
		b := bleveMerged["f"]
		want := api.FacetResult{Field: b.Field, Total: b.Total, Missing: b.Missing, Other: b.Other}
		for _, tf := range b.Terms.Terms() {
			want.Terms = append(want.Terms, api.TermCount{Term: tf.Term, Count: tf.Count})
		}
		if got := Merge(shards, plan).Facets["f"]; !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d (%d shards, size %d):\n got %+v\nwant %+v", round, nShards, size, got, want)
		}
	}
}

// A shard needs a second round when it returned all it was asked for
// and its last hit ranks above the merged K-th (or fewer than K were
// merged); never when it returned fewer, or when its first round asked
// for K already. By score, and by sort values.
func TestNeedsMore(t *testing.T) {
	hit := func(id string, score float64) api.Hit { return api.Hit{ID: id, Score: score} }
	full := &wire.ShardResponse{Hits: []api.Hit{hit("a", 9), hit("b", 8)}}   // its last, b, ranks 2nd
	low := &wire.ShardResponse{Hits: []api.Hit{hit("c", 7), hit("d", 1)}}    // its last, d, ranks last
	short := &wire.ShardResponse{Hits: []api.Hit{hit("e", 6)}}               // all it has
	tied := &wire.ShardResponse{Hits: []api.Hit{hit("f", 6.5), hit("g", 5)}} // g is the merged 6th
	merged := Merge([]*wire.ShardResponse{full, low, short, tied}, &planner.Plan{}).Hits
	for _, c := range []struct {
		name string
		sr   *wire.ShardResponse
		k    int
		want bool
	}{
		{"last ranks above the k-th", full, 4, true},
		{"last ranks below the k-th", low, 4, false},
		{"fewer than asked", short, 4, false},
		{"last is the k-th", tied, 6, false},
		{"last is above the k-th", tied, 7, true},
		{"fewer than k merged", low, 20, true},
		{"asked for k already", full, 2, false},
	} {
		plan := &planner.Plan{K: c.k, ShardK: 2}
		if got := len(Deeper([]Result{{}, {Resp: c.sr}}, merged, plan)) == 1; got != c.want {
			t.Errorf("%s: %v, want %v (merged %v)", c.name, got, c.want, merged)
		}
	}
	sorted := &planner.Plan{K: 3, ShardK: 1, Sort: []string{"-price", "_id"}}
	key := func(id, price string) api.Hit { return api.Hit{ID: id, SortKeys: []string{price, id}} }
	a := &wire.ShardResponse{Hits: []api.Hit{key("a", "9")}}
	b := &wire.ShardResponse{Hits: []api.Hit{key("b", "5")}}
	c := &wire.ShardResponse{Hits: []api.Hit{key("c", "7")}}
	d := &wire.ShardResponse{Hits: []api.Hit{key("d", "1")}}
	replies := []*wire.ShardResponse{a, b, c, d}
	m := Merge(replies, sorted).Hits // a c b d: b is the 3rd
	if got := Deeper([]Result{{Resp: a}, {Resp: b}, {Resp: c}, {Resp: d}}, m, sorted); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("sorted: shards %v asked again, want a and c: [0 2]", got)
	}
}
