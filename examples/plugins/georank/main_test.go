package main

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)

func num(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }

func geo(lon, lat float64) abi.Value {
	return abi.Value{Kind: abi.KindList, List: []abi.Value{num(lon), num(lat)}}
}

func TestOpenNearbyRated(t *testing.T) {
	sdktest.SetConfig(nil)
	ranker = nil
	// London, 8pm.
	req := &abi.RankRequest{Context: []byte(`{"lat":51.5074,"lon":-0.1278,"hour":20}`),
		Fields: []string{"rating", "open_hour", "close_hour", "location"},
		Candidates: []abi.Candidate{
			{ID: "closed-far", Score: 1, Values: []abi.Value{num(4), num(8), num(15), geo(-0.5, 51.6)}},
			{ID: "open-near", Score: 1, Values: []abi.Value{num(4), num(18), num(2), geo(-0.128, 51.507)}},
			{ID: "open-far-bad", Score: 1, Values: []abi.Value{num(2), num(10), num(23), geo(-0.5, 51.6)}},
		}}
	resp, err := sdktest.Rank(req)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range resp.Ranked {
		order = append(order, req.Candidates[r.Index].ID)
	}
	if order[0] != "open-near" || order[2] != "closed-far" && order[2] != "open-far-bad" {
		t.Fatalf("order %v", order)
	}
}
