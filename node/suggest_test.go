package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// TestSuggest: a search's suggest lists the words of a field that
// complete the last word of q, most documents first (summed over 2
// shards), beside the search's hits; with typos, the words within its
// typos too; on a dynamic string's keyword sub-field, the whole values
// that start with all of q, as typed. What cannot be is refused. Over
// NATS and HTTP.
func TestSuggest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "sg", 2, nil); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"1","name":"Tofu bowl"}
{"id":"2","name":"Spicy tofu stir fry"}
{"id":"3","name":"Tofurky roast"}
{"id":"4","name":"Toffee pudding"}
{"id":"5","name":"Tomato soup"}
{"id":"6","name":"Spicy tomato noodles"}
{"id":"7","name":"Tomato salad"}
{"id":"8","name":"Çiğ köfte"}
{"id":"9","name":"KÖFTE kebab"}
`
	mustBulk(t, c, "sg", bytes.NewBufferString(docs))
	list := func(ts []api.TermCount) string {
		var out []string
		for _, tc := range ts {
			out = append(out, fmt.Sprintf("%s %d", tc.Term, tc.Count))
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		name string
		req  api.SearchRequest
		want string
		hits int
	}{
		{"the last word's completions, most documents first", api.SearchRequest{Q: "spicy to", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name"}}, "tomato 3, tofu 2, toffee 1, tofurky 1", 0},
		{"size", api.SearchRequest{Q: "tof", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name", Size: 2}}, "tofu 2, toffee 1", 0},
		{"beside the hits", api.SearchRequest{Q: "spicy", Size: 5, Suggest: &api.SuggestRequest{Field: "name"}}, "spicy 2", 2},
		{"no typos unless asked", api.SearchRequest{Q: "tomatto", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name"}}, "", 0},
		{"typos", api.SearchRequest{Q: "tomatto", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name", Typos: true}}, "tomato 3", 0},
		{"letters beyond ASCII, folded as the field folds them", api.SearchRequest{Q: "Kö", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name"}}, "köfte 2", 0},
		{"whole values of a keyword sub-field", api.SearchRequest{Q: "Tofu b", Size: api.NoHits, Suggest: &api.SuggestRequest{Field: "name" + api.KeywordSuffix}}, "Tofu bowl 1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Search(ctx, "sg", &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := list(r.Suggestions); got != tc.want || len(r.Hits) != tc.hits || r.Facets != nil {
				t.Errorf("suggestions %q, %d hits, facets %v; want %q, %d hits, no facets", got, len(r.Hits), r.Facets, tc.want, tc.hits)
			}
		})
	}
	var hr api.SearchResponse
	if code, body := postJSON(t, "http://"+n.HTTPAddr+"/v1/indexes/sg/search", `{"q":"spicy to","size":0,"suggest":{"field":"name","size":1}}`, &hr); code != 200 || list(hr.Suggestions) != "tomato 3" {
		t.Errorf("HTTP: %d %s", code, body)
	}
	code, _, body := httpRequest(t, "GET", "http://"+n.HTTPAddr+"/v1/indexes/sg/search?q=tof&size=0&suggest=name", "")
	var gr api.SearchResponse
	if err := json.Unmarshal([]byte(body), &gr); code != 200 || err != nil || list(gr.Suggestions) != "tofu 2, toffee 1, tofurky 1" {
		t.Errorf("GET ?suggest=name: %d %s", code, body)
	}
	for _, bad := range []struct {
		req api.SearchRequest
		msg string
	}{
		{api.SearchRequest{Q: "to", Suggest: &api.SuggestRequest{}}, "suggest.field is required"},
		{api.SearchRequest{Q: "to", Suggest: &api.SuggestRequest{Field: "name", Size: 51}}, "suggest.size must be 0 (the default, 5) to 50, got 51"},
		{api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Suggest: &api.SuggestRequest{Field: "name"}}, "give a q with a word in it"},
		{api.SearchRequest{Q: "  ", Suggest: &api.SuggestRequest{Field: "name"}}, "give a q with a word in it"},
	} {
		if _, err := c.Search(ctx, "sg", &bad.req); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want bad request saying %q", bad.req.Suggest, err, bad.msg)
		}
	}
}
