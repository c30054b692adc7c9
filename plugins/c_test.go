package plugins

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// The C examples (examples/plugins/c), written from docs/plugin-abi.md
// alone, built with clang without libc and run through the host. clang
// and wasm-ld must be installed: a missing one fails these tests.
const cExamples = "../examples/plugins/c/"

func loadC(t *testing.T, file string, kind Kind, config string) *Plugin {
	t.Helper()
	spec := Spec{Name: strings.TrimSuffix(file, ".c"), Kind: kind, Instances: 1, Budget: time.Second}
	if config != "" {
		spec.Config = []byte(config)
	}
	p, err := testRuntime(t).Load(context.Background(), spec, wasmtest.C(t, cExamples+file))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCRewriter(t *testing.T) {
	p := loadC(t, "rewriter.c", Rewriter, "")
	ctx := context.Background()
	cases := []struct {
		in, want string
		changed  bool
	}{
		{"  Spicy   NOODLES ", "spicy noodles", true},
		{"Pad\tThai\n", "pad thai", true},
		{"already tidy", "already tidy", false},
		{"", "", false},
		{"   ", "", true},
		// Over the 4096 bytes first asked for, and over the module's
		// first pages: quarry_alloc is called again and memory grows.
		{strings.Repeat("AB  ", 50_000), strings.TrimSpace(strings.Repeat("ab ", 50_000)), true},
	}
	for _, c := range cases {
		resp, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: c.in, Context: []byte(`{"user":"u1"}`), Size: 10})
		if err != nil {
			t.Fatalf("rewrite %.20q: %v", c.in, err)
		}
		if changed := resp.Flags&abi.FlagQ != 0; changed != c.changed || (changed && resp.Q != c.want) || resp.Flags&^abi.FlagQ != 0 {
			t.Fatalf("rewrite %.20q: flags %d q %.20q, want %.20q (changed %v)", c.in, resp.Flags, resp.Q, c.want, c.changed)
		}
	}
}

// cBoost is what the C ranker computes: score + weight × field, the score
// unchanged where the field is not a number.
func cBoost(req *abi.RankRequest, field int, weight float64) []abi.Ranked {
	out := make([]abi.Ranked, len(req.Candidates))
	for i, c := range req.Candidates {
		s := c.Score
		if field >= 0 && c.Values[field].Kind == abi.KindNumber {
			s += float64(weight * c.Values[field].Num)
		}
		out[i] = abi.Ranked{Index: uint32(i), Score: s}
	}
	return out
}

// sortedLike sorts entries as the host does (by score, highest first,
// ties in order), through the host's own decoder.
func sortedLike(t *testing.T, entries []abi.Ranked, n int) []abi.Ranked {
	t.Helper()
	var r abi.RankResponse
	if err := abi.DecodeRankResponse(abi.AppendRankResponse(nil, &abi.RankResponse{Flags: abi.RankSortByScore, Ranked: entries}), n, &r); err != nil {
		t.Fatal(err)
	}
	return r.Ranked
}

func TestCRanker(t *testing.T) {
	ctx := context.Background()
	p := loadC(t, "ranker.c", Ranker, `{"field": "rating", "weight": 0.5}`)

	// The documentation's worked example gets the documented answer.
	got, err := p.Rank(ctx, docRankRequest())
	if err != nil {
		t.Fatal(err)
	}
	if want := docRankResponse(); !reflect.DeepEqual(got.Ranked, sortedLike(t, want.Ranked, 2)) {
		t.Fatalf("the worked example: %+v, want %+v", got.Ranked, want.Ranked)
	}

	rng := rand.New(rand.NewPCG(7, 11))
	tags := func() abi.Value {
		l := []abi.Value{{Kind: abi.KindString, Str: "spicy"}, {Kind: abi.KindList, List: []abi.Value{{Kind: abi.KindNumber, Num: 1}, {Kind: abi.KindBool, Bool: true}}}}
		return abi.Value{Kind: abi.KindList, List: l[:rng.IntN(3)]}
	}
	request := func(n int, rating func(i int) abi.Value) *abi.RankRequest {
		req := &abi.RankRequest{Q: "noodles", Context: []byte(`{"hour":20}`), Fields: []string{"tags", "open", "rating"}}
		for i := range n {
			req.Candidates = append(req.Candidates, abi.Candidate{
				ID:     fmt.Sprintf("doc-%d", rng.IntN(1<<20)),
				Score:  rng.Float64() * 20,
				Values: []abi.Value{tags(), {Kind: abi.KindBool, Bool: i%2 == 0}, rating(i)},
			})
		}
		return req
	}
	cases := []struct {
		name string
		req  *abi.RankRequest
	}{
		// All numbers: a numbers column (padded to 8 from the request's
		// start), after two values columns.
		{"numbers column", request(1000, func(i int) abi.Value {
			if i%7 == 0 {
				return abi.Value{} // missing: NaN
			}
			return abi.Value{Kind: abi.KindNumber, Num: rng.Float64() * 5}
		})},
		// One string among the numbers: a values column.
		{"values column", request(300, func(i int) abi.Value {
			if i == 5 {
				return abi.Value{Kind: abi.KindString, Str: "n/a"}
			}
			return abi.Value{Kind: abi.KindNumber, Num: float64(i%5) + 0.25}
		})},
		{"every rating missing", request(20, func(int) abi.Value { return abi.Value{} })},
		{"no candidates", request(0, nil)},
	}
	// Every padding length: the ids' sizes move the numbers column.
	for pad := range 8 {
		req := request(3, func(i int) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: float64(i + 1)} })
		req.Candidates[0].ID = strings.Repeat("x", pad)
		cases = append(cases, struct {
			name string
			req  *abi.RankRequest
		}{fmt.Sprintf("id of %d bytes", pad), req})
	}
	for _, c := range cases {
		got, err := p.Rank(ctx, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := sortedLike(t, cBoost(c.req, 2, 0.5), len(c.req.Candidates))
		if !reflect.DeepEqual(got.Ranked, want) {
			t.Fatalf("%s: got %d entries %v…, want %v…", c.name, len(got.Ranked), head(got.Ranked), head(want))
		}
	}

	// A field the request does not carry changes nothing; without a
	// configuration the field is "rating" and the weight 1.
	other := loadC(t, "ranker.c", Ranker, `{"field": "price"}`)
	req := request(50, func(i int) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: float64(i)} })
	if got, err := other.Rank(ctx, req); err != nil || !reflect.DeepEqual(got.Ranked, sortedLike(t, cBoost(req, -1, 0), 50)) {
		t.Fatalf("field not sent: %v %v", head(got.Ranked), err)
	}
	def := loadC(t, "ranker.c", Ranker, "")
	if got, err := def.Rank(ctx, req); err != nil || !reflect.DeepEqual(got.Ranked, sortedLike(t, cBoost(req, 2, 1), 50)) {
		t.Fatalf("default configuration: %v %v", head(got.Ranked), err)
	}

	// A bad configuration is the plugin's own error (status 1).
	bad := loadC(t, "ranker.c", Ranker, `{"weight": "high"}`)
	var ce *CallError
	if _, err := bad.Rank(ctx, req); !errors.As(err, &ce) || ce.Kind != KindPlugin || !strings.Contains(err.Error(), `"weight" must be a number`) {
		t.Fatalf("bad configuration: %v", err)
	}
}

func head(r []abi.Ranked) []abi.Ranked { return r[:min(3, len(r))] }
