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
