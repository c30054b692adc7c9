package broker

import (
	"errors"
	"strings"
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
			merge(&resp, shards, &planner.Plan{From: c.req.From, Size: c.req.EffectiveSize()}, nil)
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
		{Hits: []api.Hit{{ID: "a", SortKeys: []string{"b"}}, {ID: "c", SortKeys: []string{"d"}}}},
		{Hits: []api.Hit{{ID: "b", SortKeys: []string{"a"}}, {ID: "d", SortKeys: []string{"c"}}}},
	}
	var resp api.SearchResponse
	merge(&resp, shards, &planner.Plan{Size: 10, Sort: []string{"-name"}}, nil)
	if got := ids(resp.Hits); len(got) != 4 || got[0] != "c" || got[3] != "b" {
		t.Fatalf("descending sort: %v", got)
	}
}

func TestDecodeRequest(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"q":"x","size":5}`, ""},
		{`{"q":`, "malformed search request"},
		{`{"q":"x"} {"q":"y"}`, "data after the JSON object"},
		{`{"size":"ten"}`, "size"},
		{`{"from":-1}`, "from must be >= 0"},
		{`{"size":20000}`, "from+size must be <= 10000"},
		{`{"qq":"typo"}`, `unknown field "qq"`},
		{`{"facets":{"f":{"size":3}}}`, `facet "f": field is required`},
		{`[1]`, "malformed search request"},
		{`{"q":"` + strings.Repeat("x", MaxRequestBytes) + `"}`, "over the limit"},
	}
	for _, c := range cases {
		_, err := DecodeRequest([]byte(c.body))
		if c.want == "" {
			if err != nil {
				t.Errorf("%.40s: %v", c.body, err)
			}
			continue
		}
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s: got %v, want a bad request naming %q", c.body, err, c.want)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"q":"spicy","size":3,"from":1,"fields":["*"],"facets":{"c":{"field":"cuisine"}}}`))
	f.Add([]byte(`{"query":{"match":"x"},"allow_partial":false,"timeout_ms":5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		if req.Size < 0 || req.From < 0 || req.From+req.EffectiveSize() > api.MaxWindow {
			t.Fatalf("accepted out-of-range request %+v", req)
		}
	})
}
