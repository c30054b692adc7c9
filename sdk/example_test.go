package sdk_test

import (
	"fmt"
	"strings"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)

// A rewriter: register it in init; test it natively with sdktest.
func ExampleRewriter() {
	sdk.Rewriter(func(r *sdk.RewriteRequest) error {
		r.Q = strings.ReplaceAll(strings.ToLower(r.Q), "pop", "soda")
		return nil
	})
	resp, err := sdktest.Rewrite(&abi.RewriteRequest{Q: "Cheap Pop"})
	fmt.Println(resp.Q, err)
	// Output: cheap soda <nil>
}

// A ranker: look fields up once, score every candidate; candidates are
// sorted by score afterwards.
func ExampleRanker() {
	sdk.Ranker(func(r *sdk.RankRequest) error {
		rating := r.Field("rating")
		for _, c := range r.Candidates {
			if v, ok := c.NumberOf(rating); ok {
				c.Score *= v
			}
		}
		return nil
	})
	num := func(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }
	req := &abi.RankRequest{Fields: []string{"rating"}, Candidates: []abi.Candidate{
		{ID: "good", Score: 1, Values: []abi.Value{num(4.5)}},
		{ID: "better-text-worse-food", Score: 2, Values: []abi.Value{num(2)}},
	}}
	resp, _ := sdktest.Rank(req)
	for _, r := range resp.Ranked {
		fmt.Println(req.Candidates[r.Index].ID, r.Score)
	}
	// Output:
	// good 4.5
	// better-text-worse-food 4
}

// A ranker reading a geo point ([lon, lat], a list) of every candidate
// into one buffer: no allocation per candidate.
func ExampleCandidate_AppendNumbersOf() {
	sdk.Ranker(func(r *sdk.RankRequest) error {
		location := r.Field("location")
		var buf [2]float64
		for _, c := range r.Candidates {
			if p := c.AppendNumbersOf(buf[:0], location); len(p) == 2 {
				c.Score += p[1] // further north, better
			}
		}
		return nil
	})
	num := func(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }
	point := func(lon, lat float64) abi.Value {
		return abi.Value{Kind: abi.KindList, List: []abi.Value{num(lon), num(lat)}}
	}
	req := &abi.RankRequest{Fields: []string{"location"}, Candidates: []abi.Candidate{
		{ID: "london", Score: 1, Values: []abi.Value{point(-0.12, 51.5)}},
		{ID: "edinburgh", Score: 1, Values: []abi.Value{point(-3.19, 55.95)}},
		{ID: "nowhere", Score: 1, Values: []abi.Value{{Kind: abi.KindMissing}}},
	}}
	resp, _ := sdktest.Rank(req)
	for _, r := range resp.Ranked {
		fmt.Println(req.Candidates[r.Index].ID, r.Score)
	}
	// Output:
	// edinburgh 56.95
	// london 52.5
	// nowhere 1
}

// A member of the request's context, read with no reflection and no
// allocation (what json.Unmarshal would answer, at a fraction of its cost
// in WebAssembly).
func ExampleContextNumber() {
	context := []byte(`{"lat": 51.5, "lon": -0.12, "tags": ["late"]}`)
	lat, found, err := sdk.ContextNumber(context, "lat")
	fmt.Println(lat, found, err)
	_, found, err = sdk.ContextNumber(context, "hour")
	fmt.Println(found, err)
	_, _, err = sdk.ContextNumber(context, "tags")
	fmt.Println(err)
	// Output:
	// 51.5 true <nil>
	// false <nil>
	// context: malformed context: "tags" is ["late"], not a number
}
