package ltr

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
)

func num(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }

// Two models side by side, through the encoding a host uses.
func TestHooksOwnConfig(t *testing.T) {
	req := &abi.RankRequest{Fields: []string{"rating", "price"}, Candidates: []abi.Candidate{
		{ID: "cheap", Score: 1, Values: []abi.Value{num(3), num(5)}},
		{ID: "good", Score: 1, Values: []abi.Value{num(5), num(30)}},
	}}
	cases := []struct {
		config string
		scores map[string]float64
	}{
		{`{"weights":{"rating":1}}`, map[string]float64{"cheap": 4, "good": 6}}, // _score keeps its weight of 1
		{`{"bias":1,"weights":{"_score":2,"price":-0.1}}`, map[string]float64{"cheap": 2.5, "good": 0}},
		{``, map[string]float64{"cheap": 1, "good": 1}},
	}
	hooks := make([]interface{ HandleRank(in, out []byte) []byte }, len(cases))
	for i, c := range cases {
		h, err := Hooks([]byte(c.config))
		if err != nil {
			t.Fatal(err)
		}
		hooks[i] = h
	}
	for i, c := range cases {
		var resp abi.RankResponse
		if err := abi.DecodeRankResponse(hooks[i].HandleRank(abi.AppendRankRequest(nil, req), nil), 2, &resp); err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Ranked {
			id := req.Candidates[r.Index].ID
			if diff := r.Score - c.scores[id]; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("config %q: %s scored %g, want %g", c.config, id, r.Score, c.scores[id])
			}
		}
	}
}
