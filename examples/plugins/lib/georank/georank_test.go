package georank

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
)

func num(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }

func geo(lon, lat float64) abi.Value {
	return abi.Value{Kind: abi.KindList, List: []abi.Value{num(lon), num(lat)}}
}

func TestPastMidnight(t *testing.T) {
	cases := []struct {
		hour, from, to int
		open           bool
	}{
		{1, 18, 2, true}, {3, 18, 2, false}, {12, 9, 17, true}, {17, 9, 17, false},
	}
	for _, c := range cases {
		if got := Open(c.hour, c.from, c.to); got != c.open {
			t.Errorf("Open(%d, %d, %d) = %v", c.hour, c.from, c.to, got)
		}
	}
}

// Hooks run through the encoding a host uses: with an open boost of 0 an
// open place gains nothing on a closed one nearby.
func TestHooksOwnConfig(t *testing.T) {
	req := &abi.RankRequest{Context: []byte(`{"lat":51.5074,"lon":-0.1278,"hour":20}`),
		Fields: []string{"rating", "open_hour", "close_hour", "location"},
		Candidates: []abi.Candidate{
			{ID: "closed-near", Score: 1, Values: []abi.Value{num(4), num(8), num(15), geo(-0.128, 51.507)}},
			{ID: "open-far", Score: 1, Values: []abi.Value{num(4), num(18), num(2), geo(-0.5, 51.6)}},
		}}
	first := func(config string) string {
		t.Helper()
		h, err := Hooks([]byte(config))
		if err != nil {
			t.Fatal(err)
		}
		var resp abi.RankResponse
		if err := abi.DecodeRankResponse(h.HandleRank(abi.AppendRankRequest(nil, req), nil), len(req.Candidates), &resp); err != nil {
			t.Fatal(err)
		}
		return req.Candidates[resp.Ranked[0].Index].ID
	}
	if got := first(`{"open_boost":2}`); got != "open-far" {
		t.Errorf("open boost 2: %s first", got)
	}
	if got := first(`{"open_boost":0}`); got != "closed-near" {
		t.Errorf("open boost 0: %s first", got)
	}
}
