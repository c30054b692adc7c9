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

// TestRangeFacets: range and histogram facets count the documents whose
// number falls in each range, summed over 3 shards, in the order asked,
// empty ranges included; what is over their bounds is refused.
func TestRangeFacets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "rf", 3, nil); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 60 { // prices 0, 0.5, …, 29.5
		fmt.Fprintf(&docs, `{"id":"p%d","price":%g}`+"\n", i, float64(i)/2)
	}
	mustBulk(t, c, "rf", &docs)
	matchAll := json.RawMessage(`{"match_all":{}}`)
	f := func(v float64) *float64 { return &v }
	r, err := c.Search(ctx, "rf", &api.SearchRequest{Query: matchAll, Size: api.NoHits, Facets: map[string]api.FacetRequest{
		"bands": {Field: "price", Ranges: []api.FacetRange{{To: f(10)}, {Name: "mid", From: f(10), To: f(20)}, {From: f(20)}, {From: f(100)}}},
		"hist":  {Field: "price", Interval: 7.5, Min: f(0), Max: f(30)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := func(name string) (out []string) {
		for _, rc := range r.Facets[name].Ranges {
			out = append(out, fmt.Sprintf("%s=%d", rc.Name, rc.Count))
		}
		return out
	}
	if g, want := strings.Join(got("bands"), " "), "-10=20 mid=20 20-=20 100-=0"; g != want {
		t.Errorf("bands: %s, want %s", g, want)
	}
	if g, want := strings.Join(got("hist"), " "), "0=15 7.5=15 15=15 22.5=15"; g != want {
		t.Errorf("histogram: %s, want %s", g, want)
	}
	for _, bad := range []struct {
		f   api.FacetRequest
		msg string
	}{
		{api.FacetRequest{Field: "price", Interval: 0.1, Min: f(0), Max: f(100)}, "1000 buckets"},
		{api.FacetRequest{Field: "price", Interval: 1}, "needs min < max"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{From: f(5), To: f(1)}}}, "must be below"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{}}}, "neither from nor to"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{Name: "a", To: f(1)}, {Name: "a", From: f(1)}}}, `two ranges named "a"`},
		{api.FacetRequest{Field: "price", Interval: 1, Min: f(0), Max: f(5), Ranges: []api.FacetRange{{To: f(1)}}}, "not both"},
	} {
		_, err := c.Search(ctx, "rf", &api.SearchRequest{Query: matchAll, Facets: map[string]api.FacetRequest{"x": bad.f}})
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want bad request saying %q", bad.f, err, bad.msg)
		}
	}
}
