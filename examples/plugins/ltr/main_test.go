package main

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)

func num(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }

func TestLinearModel(t *testing.T) {
	sdktest.SetConfig([]byte(`{"bias":1,"weights":{"_score":2,"rating":1,"price":-0.1}}`))
	model = nil
	req := &abi.RankRequest{Fields: []string{"rating", "price"}, Candidates: []abi.Candidate{
		{ID: "cheap-good", Score: 1, Values: []abi.Value{num(5), num(10)}}, // 1+2+5-1 = 7
		{ID: "pricey", Score: 1.5, Values: []abi.Value{num(4), num(40)}},   // 1+3+4-4 = 4
		{ID: "no-fields", Score: 1, Values: []abi.Value{{}, {}}},           // 1+2 = 3
	}}
	resp, err := sdktest.Rank(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		score float64
	}{{"cheap-good", 7}, {"pricey", 4}, {"no-fields", 3}}
	for i, w := range want {
		r := resp.Ranked[i]
		if req.Candidates[r.Index].ID != w.id || r.Score != w.score {
			t.Fatalf("rank %d: %s %g, want %s %g", i, req.Candidates[r.Index].ID, r.Score, w.id, w.score)
		}
	}
}
