package sdk_test

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// TestFieldsOfEachRequest: one instance's ranker reads each request's
// own fields, when a request names other fields than the one before it in
// the same number (the instance reuses its field map while the names
// stay: a new name at index 0 was read as the old one's).
func TestFieldsOfEachRequest(t *testing.T) {
	var got []float64
	h := &sdk.Hooks{Rank: func(r *sdk.RankRequest) error {
		for _, c := range r.Candidates {
			v, ok := c.NumberOf(r.Field("b"))
			if !ok {
				v = -1
			}
			got = append(got, v)
		}
		return nil
	}}
	for _, fields := range [][]string{{"a"}, {"b"}, {"a", "b"}, {"b", "a"}} {
		req := &abi.RankRequest{Fields: fields, Candidates: []abi.Candidate{{ID: "x", Score: 1}}}
		for _, f := range fields {
			v := 1.0
			if f == "b" {
				v = 2
			}
			req.Candidates[0].Values = append(req.Candidates[0].Values, abi.Value{Kind: abi.KindNumber, Num: v})
		}
		var resp abi.RankResponse
		if err := abi.DecodeRankResponse(h.HandleRank(abi.AppendRankRequest(nil, req), nil), 1, &resp); err != nil {
			t.Fatal(err)
		}
	}
	if want := []float64{-1, 2, 2, 2}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("field b read as %v, want %v", got, want)
	}
}
