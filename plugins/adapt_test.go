package plugins

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// The one adapter from a search request to a plugin's request: every part
// of the request reaches the rewriter (validation used to leave out the
// query, the filter and the offset), sizes as the search uses them.
func TestRewriteInput(t *testing.T) {
	q, f, c := json.RawMessage(`{"match":"x"}`), json.RawMessage(`{"term":"y","field":"t"}`), json.RawMessage(`{"city":"London"}`)
	for _, tc := range []struct {
		name string
		req  api.SearchRequest
		want abi.RewriteRequest
	}{
		{"everything", api.SearchRequest{Q: "pad thai", Query: q, Filter: f, Context: c, Size: 5, From: 20},
			abi.RewriteRequest{Q: "pad thai", Query: q, Filter: f, Context: c, Size: 5, From: 20}},
		{"default size, no context", api.SearchRequest{Q: "noodles"}, abi.RewriteRequest{Q: "noodles", Size: api.DefaultSize}},
		{"no hits", api.SearchRequest{Q: "noodles", Size: api.NoHits}, abi.RewriteRequest{Q: "noodles", Size: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RewriteInput(&tc.req); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RewriteInput(%+v) = %+v, want %+v", tc.req, got, tc.want)
			}
		})
	}
}

func TestRankInput(t *testing.T) {
	hits := []api.Hit{{ID: "a", Score: 2, Fields: map[string]any{"price": 9.5, "name": "pho"}}, {ID: "b", Score: 1}}
	got := RankInput("pho", []byte(`{}`), hits, []string{"price", "name"})
	want := &abi.RankRequest{Q: "pho", Context: []byte(`{}`), Fields: []string{"price", "name"}, Candidates: []abi.Candidate{
		{ID: "a", Score: 2, Values: []abi.Value{ValueOf(9.5), ValueOf("pho")}},
		{ID: "b", Score: 1, Values: []abi.Value{ValueOf(nil), ValueOf(nil)}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RankInput = %+v, want %+v", got, want)
	}
}

func TestCheckRewrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  abi.RewriteResponse
		ok   bool
	}{
		{"nothing changed", abi.RewriteResponse{}, true},
		{"q only", abi.RewriteResponse{Flags: abi.FlagQ, Q: "pizza"}, true},
		{"a JSON query", abi.RewriteResponse{Flags: abi.FlagQuery, Query: []byte(`{"match":"pizza"}`)}, true},
		{"query cleared", abi.RewriteResponse{Flags: abi.FlagQuery}, true},
		{"a query that is not JSON", abi.RewriteResponse{Flags: abi.FlagQuery, Query: []byte(`{"match":`)}, false},
		{"not JSON but not flagged", abi.RewriteResponse{Query: []byte(`{`), Filter: []byte(`{`)}, true},
		{"a JSON filter", abi.RewriteResponse{Flags: abi.FlagFilter, Filter: []byte(`{"term":"veg"}`)}, true},
		{"filter cleared", abi.RewriteResponse{Flags: abi.FlagFilter}, true},
		{"a filter that is not JSON", abi.RewriteResponse{Flags: abi.FlagFilter, Filter: []byte(`[`)}, false},
	} {
		if err := CheckRewrite(&tc.out); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
