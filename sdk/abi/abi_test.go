package abi

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
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

// le builds a message from parts: byte, uint32 (u32), float64 (f64) and
// string (raw bytes).
func le(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case byte:
			b = append(b, v)
		case uint32:
			b = appendU32(b, v)
		case float64:
			b = appendF64(b, v)
		case string:
			b = append(b, v...)
		default:
			panic(fmt.Sprintf("le: %T", p))
		}
	}
	return b
}

// refused checks that err is ErrMalformed with exactly the detail want.
func refused(t *testing.T, name string, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("%s: got %v, want ErrMalformed", name, err)
		return
	}
	if got := strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": "); got != want {
		t.Errorf("%s:\n got  %q\n want %q", name, got, want)
	}
}

// Every rule of a rank response, for a request of 3 candidates: the error
// names the rule broken and where.
func TestRankResponseRules(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		resp []byte
		want string
	}{
		{"empty", nil, "empty response (want a status byte)"},
		{"unknown status", le(byte(7)), "status byte 7 (want 0, ok, or 1, error)"},
		{"no flags", le(byte(StatusOK)), "truncated at byte 1 (want 1 more byte for flags)"},
		{"no count", le(byte(StatusOK), byte(0), byte(1), byte(0)), "truncated at byte 4 (want 2 more bytes for count)"},
		{"unknown flag", le(byte(StatusOK), byte(3), uint32(0)), "flags 0x03: unknown bits 0x02 (a rank response knows 0x01, sort by score)"},
		{"count over the candidates", le(byte(StatusOK), byte(0), uint32(4)), "count 4 is more than the 3 candidates"},
		{"truncated score", le(byte(StatusOK), byte(0), uint32(2), uint32(0), 1.0, uint32(1), "\x00\x00\x00"),
			"truncated at byte 25 (want 5 more bytes for entry 1's score)"},
		{"truncated before a score", le(byte(StatusOK), byte(0), uint32(3), uint32(0), 1.0, uint32(1), 2.0, uint32(2)),
			"truncated at byte 34 (want 8 more bytes for entry 2's score)"},
		{"truncated index", le(byte(StatusOK), byte(0), uint32(2), uint32(0), 1.0, "\x01"),
			"truncated at byte 19 (want 3 more bytes for entry 1's index)"},
		{"trailing bytes", le(byte(StatusOK), byte(0), uint32(1), uint32(0), 1.0, "xy"),
			"2 bytes after the last of the 1 entries (the response ends at byte 18, not 20)"},
		{"index out of range", le(byte(StatusOK), byte(0), uint32(2), uint32(0), 1.0, uint32(17), 1.0),
			"entry 1: index 17 out of range (3 candidates)"},
		{"index = count", le(byte(StatusOK), byte(0), uint32(1), uint32(3), 1.0), "entry 0: index 3 out of range (3 candidates)"},
		{"repeated index", le(byte(StatusOK), byte(0), uint32(3), uint32(2), 1.0, uint32(0), 1.0, uint32(2), 1.0),
			"entry 2 repeats index 2 (entry 0's)"},
		{"NaN", le(byte(StatusOK), byte(1), uint32(2), uint32(0), 1.0, uint32(1), nan), "entry 1: NaN score"},
		{"+Inf", le(byte(StatusOK), byte(0), uint32(3), uint32(0), 1.0, uint32(1), 2.0, uint32(2), inf), "entry 2: +Inf score"},
		{"-Inf", le(byte(StatusOK), byte(1), uint32(1), uint32(0), -inf), "entry 0: -Inf score"},
	}
	for _, c := range cases {
		var out RankResponse
		refused(t, c.name, DecodeRankResponse(c.resp, 3, &out), c.want)
	}
	// The limits themselves are fine.
	ok := []*RankResponse{
		{},
		{Flags: RankSortByScore, Ranked: []Ranked{{2, math.MaxFloat64}, {0, -math.MaxFloat64}, {1, math.SmallestNonzeroFloat64}}},
		{Ranked: []Ranked{{1, math.Copysign(0, -1)}}},
	}
	for _, r := range ok {
		var out RankResponse
		if err := DecodeRankResponse(AppendRankResponse(nil, r), 3, &out); err != nil {
			t.Errorf("%+v refused: %v", r, err)
		}
	}
	var ge *GuestError
	if err := DecodeRankResponse(le(byte(StatusError), "no model"), 3, &RankResponse{}); !errors.As(err, &ge) || errors.Is(err, ErrMalformed) || ge.Message != "no model" {
		t.Errorf("status 1: %v, want the plugin's error", err)
	}
}

// Every rule of a rewrite response.
func TestRewriteResponseRules(t *testing.T) {
	cases := []struct {
		name string
		resp []byte
		want string
	}{
		{"empty", nil, "empty response (want a status byte)"},
		{"unknown status", le(byte(2)), "status byte 2 (want 0, ok, or 1, error)"},
		{"no flags", le(byte(StatusOK)), "truncated at byte 1 (want 1 more byte for flags)"},
		{"unknown flag", le(byte(StatusOK), byte(0x11)), "flags 0x11: unknown bits 0x10 (a rewrite response knows 0x01 q, 0x02 query, 0x04 filter, 0x08 rerank_depth)"},
		{"q's length cut", le(byte(StatusOK), byte(FlagQ), "\x05\x00"), "truncated at byte 4 (want 2 more bytes for q's length)"},
		{"q cut", le(byte(StatusOK), byte(FlagQ), uint32(5), "ab"), "truncated at byte 8 (want 3 more bytes for q)"},
		{"query missing", le(byte(StatusOK), byte(FlagQ|FlagQuery), uint32(1), "a"), "truncated at byte 7 (want 4 more bytes for query's length)"},
		{"filter cut", le(byte(StatusOK), byte(FlagFilter), uint32(10), "{}"), "truncated at byte 8 (want 8 more bytes for filter)"},
		{"rerank depth cut", le(byte(StatusOK), byte(FlagRerankDepth), "\x64"), "truncated at byte 3 (want 3 more bytes for rerank_depth)"},
		{"unflagged field sent", le(byte(StatusOK), byte(0), uint32(0)), "4 bytes after the end of the response (it ends at byte 2, not 6)"},
		{"trailing", le(byte(StatusOK), byte(FlagRerankDepth), uint32(50), "\x00"), "1 byte after the end of the response (it ends at byte 6, not 7)"},
	}
	for _, c := range cases {
		var out RewriteResponse
		refused(t, c.name, DecodeRewriteResponse(c.resp, &out), c.want)
	}
}

// Every rule of the requests (what a guest decoding with this package, or
// sdktest, gets for a request that breaks one).
func TestRequestRules(t *testing.T) {
	good := AppendRankRequest(nil, &RankRequest{Fields: []string{"n"}, Candidates: []Candidate{{ID: "a", Values: []Value{{Kind: KindNumber, Num: 1}}}}})
	rank := []struct {
		name string
		req  []byte
		want string
	}{
		{"empty", nil, "truncated at byte 0 (want 4 more bytes for q's length)"},
		{"field count", le(uint32(0), uint32(0), uint32(3), uint32(1)), "truncated at byte 16 (field count 3 needs at least 8 more bytes)"},
		{"field name cut", le(uint32(0), uint32(0), uint32(1), uint32(4), "ra"), "truncated at byte 18 (want 2 more bytes for field 0's name)"},
		{"candidate count", le(uint32(0), uint32(0), uint32(0), uint32(2), uint32(0)), "truncated at byte 20 (candidate count 2 needs at least 20 more bytes)"},
		{"ids' total size without the prefixes", le(uint32(0), uint32(0), uint32(0), uint32(1), uint32(1), uint32(1), "a", 1.0),
			"the ids' total size says 1 bytes, the 1 ids take 5"},
		{"column kind", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(9)),
			"field 0: column kind 9 (want 0, values, or 1, numbers)"},
		{"no padding", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnNumbers), 2.0),
			"truncated at byte 47 (want 1 more byte for candidate 0's field 0 number)"},
		{"padding cut", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnNumbers)),
			"truncated at byte 39 (want 1 more byte for field 0's column padding)"},
		{"value kind", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnValues), byte(7)),
			"candidate 0's field 0 value: value kind 7 (want 0 to 4)"},
		{"string cut", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnValues), byte(KindString), uint32(3), "x"),
			"truncated at byte 45 (want 2 more bytes for candidate 0's field 0 string)"},
		{"list count", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnValues), byte(KindList), uint32(9)),
			"truncated at byte 44 (candidate 0's field 0 list count 9 needs at least 9 more bytes)"},
		{"nested too deep", le(uint32(0), uint32(0), uint32(1), uint32(1), "n", uint32(1), uint32(5), uint32(1), "a", 1.0, byte(ColumnValues),
			byte(KindList), uint32(1), byte(KindList), uint32(1), byte(KindList), uint32(1), byte(KindList), uint32(1), byte(KindList), uint32(1), byte(KindMissing)),
			"candidate 0's field 0 value: lists nested deeper than 4"},
		{"trailing", append(good, 0), "1 byte after the end of the request (it ends at byte 48, not 49)"},
	}
	for _, c := range rank {
		var out RankRequest
		refused(t, "rank request: "+c.name, DecodeRankRequest(c.req, &out), c.want)
	}
	if err := DecodeRankRequest(good, &RankRequest{}); err != nil {
		t.Fatalf("good rank request: %v", err)
	}
	rw := AppendRewriteRequest(nil, &RewriteRequest{Q: "x"})
	refused(t, "rewrite request cut", DecodeRewriteRequest(rw[:len(rw)-2], &RewriteRequest{}), "truncated at byte 23 (want 2 more bytes for from)")
	refused(t, "rewrite request trailing", DecodeRewriteRequest(append(rw, 1, 2), &RewriteRequest{}), "2 bytes after the end of the request (it ends at byte 25, not 27)")
}

// A refusal is ErrMalformed (or the plugin's own error) with a detail;
// what is accepted re-encodes to the same bytes.
func FuzzDecodeRewriteResponse(f *testing.F) {
	f.Add(AppendRewriteResponse(nil, &RewriteResponse{Flags: FlagQ | FlagQuery, Q: "x", Query: []byte("{}")}))
	f.Add(AppendRewriteResponse(nil, &RewriteResponse{Flags: FlagQ | FlagQuery | FlagFilter | FlagRerankDepth, Q: "x", Filter: []byte("{}"), RerankDepth: 9}))
	f.Add(AppendError(nil, "no"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RewriteResponse
		err := DecodeRewriteResponse(b, &r)
		checkRefusal(t, err)
		if err == nil {
			if again := AppendRewriteResponse(nil, &r); !bytes.Equal(again, b) {
				t.Fatalf("accepted %x, re-encoded as %x", b, again)
			}
		}
	})
}

// checkRefusal fails unless err is nil, a *GuestError, or ErrMalformed with
// a detail.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var ge *GuestError
	switch {
	case err == nil, errors.As(err, &ge):
	case !errors.Is(err, ErrMalformed):
		t.Fatalf("refused with %v, not ErrMalformed", err)
	case len(err.Error()) <= len(ErrMalformed.Error())+2:
		t.Fatalf("refused with %q: no detail", err)
	}
}

func FuzzDecodeRankResponse(f *testing.F) {
	f.Add(AppendRankResponse(nil, &RankResponse{Ranked: []Ranked{{Index: 1, Score: 2}}}), 3)
	f.Add(AppendRankResponse(nil, &RankResponse{Flags: RankSortByScore, Ranked: []Ranked{{Index: 1, Score: 2}, {Index: 0, Score: math.Inf(1)}}}), 2)
	f.Add(AppendRankResponse(nil, &RankResponse{Ranked: []Ranked{{Index: 0, Score: 2}, {Index: 0, Score: math.NaN()}}}), 2)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		var r RankResponse
		err := DecodeRankResponse(b, n, &r)
		checkRefusal(t, err)
		if err != nil {
			return
		}
		seen := map[uint32]bool{}
		for _, e := range r.Ranked {
			switch {
			case int(e.Index) >= n:
				t.Fatal("index out of range accepted")
			case seen[e.Index]:
				t.Fatal("repeated index accepted")
			case math.IsNaN(e.Score) || math.IsInf(e.Score, 0):
				t.Fatalf("score %v accepted", e.Score)
			}
			seen[e.Index] = true
		}
		if r.Flags&RankSortByScore == 0 {
			if again := AppendRankResponse(nil, &r); !bytes.Equal(again, b) {
				t.Fatalf("accepted %x, re-encoded as %x", b, again)
			}
		}
	})
}

func FuzzDecodeRankRequest(f *testing.F) {
	f.Add(AppendRankRequest(nil, sampleRank()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RankRequest
		checkRefusal(t, DecodeRankRequest(b, &r))
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

// The sort (insertion up to radixMin entries, radix above) agrees with a
// stable comparison sort, ties, negative scores and zeros included.
func TestSortByScoreMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 54 {
		n := 1 + rng.IntN(300)
		switch round { // each side of the switch from insertion to radix
		case 50, 51:
			n = radixMin + round - 50
		case 52:
			n = 2
		}
		if round == 53 {
			n = radixMin // with -0 and +0 tied: they keep their order
		}
		in := make([]Ranked, n)
		for i := range in {
			in[i] = Ranked{Index: uint32(i), Score: float64(rng.IntN(20)-10) / 4}
			if round%3 == 0 {
				in[i].Score = rng.NormFloat64() * 1e6
			}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b Ranked) int { return cmp.Compare(b.Score, a.Score) })
		if round == 53 {
			for i := range in {
				in[i].Score = 0
				if i%2 == 0 {
					in[i].Score = math.Copysign(0, -1)
				}
			}
			want = slices.Clone(in)
		}
		got := slices.Clone(in)
		sortByScore(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (%d entries): sort differs from a stable sort", round, n)
		}
	}
}

// BenchmarkSortByScore sorts a ranker's usual 50 entries and 1,000, each
// by the insertion sort and the radix sort (radixMin is where the radix
// sort starts to win).
func BenchmarkSortByScore(b *testing.B) {
	for _, n := range []int{50, radixMin, 1000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		in := make([]Ranked, n)
		for i := range in {
			in[i] = Ranked{Index: uint32(i), Score: rng.NormFloat64() * 10}
		}
		work := make([]Ranked, n)
		for _, s := range []struct {
			name string
			sort func([]Ranked)
		}{{"insertion", insertionSortByScore}, {"radix", radixSortByScore}} {
			b.Run(fmt.Sprintf("%d/%s", n, s.name), func(b *testing.B) {
				for b.Loop() {
					copy(work, in)
					s.sort(work)
				}
			})
		}
	}
}
