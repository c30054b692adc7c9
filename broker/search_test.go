package broker

import (
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

func hits(pairs ...any) []api.Hit {
	var out []api.Hit
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, api.Hit{ID: pairs[i].(string), Score: pairs[i+1].(float64)})
	}
	return out
}

func ids(h []api.Hit) []string {
	var out []string
	for _, x := range h {
		out = append(out, x.ID)
	}
	return out
}

func TestMerge(t *testing.T) {
	shards := []*wire.ShardResponse{
		{Hits: hits("a", 3.0, "c", 1.0, "e", 0.5), Total: 30},
		{Hits: hits("b", 2.0, "d", 1.0), Total: 12},
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
			var resp api.SearchResponse
			merge(&resp, shards, &planner.Plan{From: c.req.From, Size: c.req.EffectiveSize()})
			if resp.Total != 42 {
				t.Fatalf("total %d", resp.Total)
			}
			got := ids(resp.Hits)
			if len(got) != len(c.want) || (c.wantLen0 && resp.Hits == nil) {
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
		{Hits: []api.Hit{{ID: "a", Sort: []string{"b"}}, {ID: "c", Sort: []string{"d"}}}},
		{Hits: []api.Hit{{ID: "b", Sort: []string{"a"}}, {ID: "d", Sort: []string{"c"}}}},
	}
	var resp api.SearchResponse
	merge(&resp, shards, &planner.Plan{Size: 10, Sort: []string{"-name"}})
	if got := ids(resp.Hits); len(got) != 4 || got[0] != "c" || got[3] != "b" {
		t.Fatalf("descending sort: %v", got)
	}
}
