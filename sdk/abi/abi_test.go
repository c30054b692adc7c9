package abi

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func sampleRank() *RankRequest {
	return &RankRequest{
		Q: "spicy noodles", Context: []byte(`{"lat":51.5}`), Fields: []string{"rating", "tags", "open"},
		Candidates: []Candidate{
			{ID: "a", Score: 1.5, Values: []Value{{Kind: KindNumber, Num: 4.5}, {Kind: KindList, List: []Value{{Kind: KindString, Str: "spicy"}}}, {Kind: KindBool, Bool: true}}},
			{ID: "b", Score: 0.5, Values: []Value{{Kind: KindMissing}, {Kind: KindString, Str: "vegan"}, {Kind: KindBool}}},
		},
	}
}

func TestRoundTrips(t *testing.T) {
	rw := &RewriteRequest{Q: "pop", Query: []byte(`{"match":"x"}`), Context: []byte(`{}`), Size: 10, From: 5}
	var rw2 RewriteRequest
	if err := DecodeRewriteRequest(AppendRewriteRequest(nil, rw), &rw2); err != nil {
		t.Fatal(err)
	}
	if rw2.Q != rw.Q || string(rw2.Query) != string(rw.Query) || rw2.Size != 10 || rw2.From != 5 || len(rw2.Filter) != 0 {
		t.Fatalf("rewrite request: %+v", rw2)
	}
	resp := &RewriteResponse{Flags: FlagQ | FlagRerankDepth, Q: "soda", RerankDepth: 100}
	var resp2 RewriteResponse
	if err := DecodeRewriteResponse(AppendRewriteResponse(nil, resp), &resp2); err != nil || !reflect.DeepEqual(*resp, resp2) {
		t.Fatalf("rewrite response: %+v %v", resp2, err)
	}
	rk := sampleRank()
	var rk2 RankRequest
	if err := DecodeRankRequest(AppendRankRequest(nil, rk), &rk2); err != nil || !reflect.DeepEqual(rk.Candidates, rk2.Candidates) {
		t.Fatalf("rank request: %+v %v", rk2, err)
	}
	rr := &RankResponse{Ranked: []Ranked{{Index: 1, Score: 9}, {Index: 0, Score: 1}}}
	var rr2 RankResponse
	if err := DecodeRankResponse(AppendRankResponse(nil, rr), 2, &rr2); err != nil || !reflect.DeepEqual(rr.Ranked, rr2.Ranked) {
		t.Fatalf("rank response: %+v %v", rr2, err)
	}
	var ge *GuestError
	if err := DecodeRankResponse(AppendError(nil, "boom"), 2, &rr2); !errors.As(err, &ge) || ge.Message != "boom" {
		t.Fatalf("error response: %v", err)
	}
}

func TestRankResponseRefused(t *testing.T) {
	cases := map[string]*RankResponse{
		"index out of range": {Ranked: []Ranked{{Index: 2}}},
		"duplicate":          {Ranked: []Ranked{{Index: 0}, {Index: 0}}},
		"too many":           {Ranked: []Ranked{{Index: 0}, {Index: 1}, {Index: 1}}},
	}
	for name, r := range cases {
		var out RankResponse
		if err := DecodeRankResponse(AppendRankResponse(nil, r), 2, &out); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, b := range [][]byte{nil, {7}, {StatusOK}, {StatusOK, 0, 1, 0, 0}, {StatusOK, 9, 0, 0, 0, 0}} {
		var out RankResponse
		if err := DecodeRankResponse(b, 2, &out); err == nil {
			t.Errorf("%v accepted", b)
		}
	}
}

func FuzzDecodeRewriteResponse(f *testing.F) {
	f.Add(AppendRewriteResponse(nil, &RewriteResponse{Flags: FlagQ | FlagQuery, Q: "x", Query: []byte("{}")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RewriteResponse
		_ = DecodeRewriteResponse(b, &r)
	})
}

func FuzzDecodeRankResponse(f *testing.F) {
	f.Add(AppendRankResponse(nil, &RankResponse{Ranked: []Ranked{{Index: 1, Score: 2}}}), 3)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		var r RankResponse
		if DecodeRankResponse(b, n, &r) == nil {
			for _, e := range r.Ranked {
				if int(e.Index) >= n {
					t.Fatal("index out of range accepted")
				}
			}
		}
	})
}

func FuzzDecodeRankRequest(f *testing.F) {
	f.Add(AppendRankRequest(nil, sampleRank()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RankRequest
		_ = DecodeRankRequest(b, &r)
	})
}

func TestSortByScoreKeepsTieOrder(t *testing.T) {
	in := &RankResponse{Flags: RankSortByScore, Ranked: []Ranked{{3, 1}, {1, 2}, {0, 1}, {2, 2}, {4, 0.5}}}
	var out RankResponse
	if err := DecodeRankResponse(AppendRankResponse(nil, in), 5, &out); err != nil {
		t.Fatal(err)
	}
	want := []uint32{1, 2, 3, 0, 4}
	for i, e := range out.Ranked {
		if e.Index != want[i] {
			t.Fatalf("order %+v, want indexes %v", out.Ranked, want)
		}
	}
}

// The radix sort agrees with a stable comparison sort, ties, negative
// scores and zeros included.
func TestSortByScoreMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		n := 1 + rng.IntN(300)
		in := make([]Ranked, n)
		for i := range in {
			in[i] = Ranked{Index: uint32(i), Score: float64(rng.IntN(20)-10) / 4}
			if round%3 == 0 {
				in[i].Score = rng.NormFloat64() * 1e6
			}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b Ranked) int { return cmp.Compare(b.Score, a.Score) })
		got := slices.Clone(in)
		sortByScore(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: radix sort differs from a stable sort", round)
		}
	}
}
