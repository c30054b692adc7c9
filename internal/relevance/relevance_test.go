package relevance

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Each case's figures are worked out by hand in its comment.
func TestJudgeScore(t *testing.T) {
	cases := []struct {
		name    string
		ranking []string
		ratings map[string]int
		k       int
		want    Scores
	}{
		// DCG = (2^3-1)/log2 2 + 0 + (2^2-1)/log2 4 = 7 + 1.5 = 8.5;
		// ideal 3,2,1: 7 + 3/log2 3 + 1/log2 4 = 9.3927892607;
		// relevant a, c, d: 2 of 3 in the top 3.
		{"graded", []string{"a", "b", "c"}, map[string]int{"a": 3, "b": 0, "c": 2, "d": 1}, 3,
			Scores{NDCG: 0.9049495058460971, RR: 1, Precision: 2.0 / 3, Recall: 2.0 / 3}},
		// Unrated x and y count as 0: DCG = 1/log2 4 = 0.5, ideal 1.
		{"unrated", []string{"x", "y", "a"}, map[string]int{"a": 1}, 3,
			Scores{NDCG: 0.5, RR: 1.0 / 3, Precision: 1.0 / 3, Recall: 1}},
		// No hits at all: nothing found; precision over k, not over 0.
		{"empty results", nil, map[string]int{"a": 2}, 10,
			Scores{ZeroRelevant: 1}},
		// Nothing rated above 0: every metric 0, ideal DCG 0 (no NaN).
		{"no relevant docs", []string{"a", "b"}, map[string]int{"a": 0, "b": 0}, 2,
			Scores{ZeroRelevant: 1}},
		// Tied grades: any order of equals is ideal.
		{"tied grades, ideal", []string{"c", "a", "b"}, map[string]int{"a": 2, "b": 2, "c": 2}, 2,
			Scores{NDCG: 1, RR: 1, Precision: 1, Recall: 2.0 / 3}},
		// DCG = 3/log2 3; ideal = 3 + 3/log2 3: 0.3868528072.
		{"tied grades, one missed", []string{"x", "a"}, map[string]int{"a": 2, "b": 2}, 2,
			Scores{NDCG: 0.3868528072345416, RR: 0.5, Precision: 0.5, Recall: 0.5}},
		// The relevant document is below k.
		{"below k", []string{"b", "a"}, map[string]int{"a": 3}, 1,
			Scores{ZeroRelevant: 1}},
		// A repeated id counts once, at its first rank: b is 2nd.
		{"repeated id", []string{"a", "a", "b"}, map[string]int{"b": 1}, 2,
			Scores{NDCG: 1 / math.Log2(3), RR: 0.5, Precision: 0.5, Recall: 1}},
		// Ratings of 0 are rated, not relevant: ideal DCG from a only.
		{"zero rated", []string{"b", "a"}, map[string]int{"a": 1, "b": 0}, 5,
			Scores{NDCG: 1 / math.Log2(3), RR: 0.5, Precision: 0.2, Recall: 1}},
	}
	for _, c := range cases {
		got := Score(c.ranking, c.ratings, c.k)
		if !near(got.NDCG, c.want.NDCG) || !near(got.RR, c.want.RR) || !near(got.Precision, c.want.Precision) ||
			!near(got.Recall, c.want.Recall) || got.ZeroRelevant != c.want.ZeroRelevant {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestJudgeStatistics(t *testing.T) {
	// A constant's interval is the constant.
	if m, lo, hi := Interval([]float64{0.5, 0.5, 0.5}, 0.95); m != 0.5 || lo != 0.5 || hi != 0.5 {
		t.Fatalf("constant: %g [%g, %g]", m, lo, hi)
	}
	if m, lo, hi := Interval(nil, 0.95); m != 0 || lo != 0 || hi != 0 {
		t.Fatalf("empty: %g [%g, %g]", m, lo, hi)
	}
	// The interval holds the mean, and the lower bound is below it.
	xs := []float64{0, 1, 0.5, 0.25, 0.75, 1, 0, 0.5, 0.9, 0.1}
	m, lo, hi := Interval(xs, 0.95)
	if !near(m, 0.5) || lo >= m || hi <= m || lo < 0 || hi > 1 {
		t.Fatalf("interval: %g [%g, %g]", m, lo, hi)
	}
	if lb := LowerBound(xs, 0.95); lb < lo || lb >= m {
		t.Fatalf("one-sided bound %g should lie between the two-sided low %g and the mean %g", lb, lo, m)
	}
	// Seeded: the same figures every time.
	if _, lo2, hi2 := Interval(xs, 0.95); lo2 != lo || hi2 != hi {
		t.Fatal("two bootstraps differ")
	}
	// No difference: p = 1. Twenty equal gains: only the two all-same
	// sign flips (2 in 2^20) are as extreme, so p is (1+~0)/5001.
	if p := RandomizationTest(make([]float64, 20)); p != 1 {
		t.Fatalf("no difference: p %g", p)
	}
	ones := make([]float64, 20)
	for i := range ones {
		ones[i] = 0.1
	}
	if p := RandomizationTest(ones); p > 2.0/float64(1+RandomizationRounds) {
		t.Fatalf("a consistent gain: p %g", p)
	}
	// Symmetric differences: no evidence.
	if p := RandomizationTest([]float64{0.1, -0.1, 0.2, -0.2}); p < 0.5 {
		t.Fatalf("symmetric: p %g", p)
	}
	if lb := LowerBound(PairedDiffs([]float64{1, 1, 1}, []float64{0, 0, 0}), 0.95); lb != -1 {
		t.Fatalf("a certain drop of 1: lower bound %g", lb)
	}
}

// rankings makes a SearchFunc answering each q with a fixed list.
func rankings(m map[string][]string) SearchFunc {
	return func(_ context.Context, req *api.SearchRequest) (*api.SearchResponse, error) {
		ids, ok := m[req.Q]
		if !ok {
			return nil, api.Errorf(api.CodeUnavailable, "no broker")
		}
		resp := &api.SearchResponse{}
		for _, id := range ids[:min(len(ids), req.Size)] {
			resp.Hits = append(resp.Hits, api.Hit{ID: id})
		}
		return resp, nil
	}
}

func TestJudgeEvaluateAndGate(t *testing.T) {
	set := &api.JudgementSet{Index: "i", Name: "s", Version: 2}
	var good, bad = map[string][]string{}, map[string][]string{}
	for i := range 30 {
		q := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		set.Queries = append(set.Queries, api.JudgedQuery{Q: q, Line: i + 1, Ratings: map[string]int{"r": 3, "s": 1}})
		good[q] = []string{"r", "s", "n1"}
		bad[q] = []string{"n1", "n2", "s", "r"}
	}
	ctx := context.Background()
	rep, err := Evaluate(ctx, set, Options{K: 3}, rankings(good), rankings(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Queries) != 30 || rep.Summary[0].Metric != NDCG || !near(rep.Summary[0].Live.Mean, 1) {
		t.Fatalf("report: %+v", rep.Summary)
	}
	// bad: s at 3 only: DCG 1/2, ideal 7 + 1/log2 3.
	wantBad := 0.5 / (7 + 1/math.Log2(3))
	if !near(rep.Summary[0].Candidate.Mean, wantBad) || !near(rep.Summary[0].Diff.Mean, wantBad-1) || rep.Summary[0].P > 0.001 {
		t.Fatalf("candidate: %+v diff %+v p %g", rep.Summary[0].Candidate, rep.Summary[0].Diff, rep.Summary[0].P)
	}
	g := &api.Gate{Sets: []string{"s"}, Metric: NDCG, MaxDrop: 0.01}
	if err := CheckGate(g); err != nil || g.K != 10 || g.Confidence != 0.95 {
		t.Fatalf("defaults: %v %+v", err, g)
	}
	g.K = 3
	res, err := GateSet(g, rep)
	if err != nil || res.Passed || res.Queries != 30 {
		t.Fatalf("a worse ranker passed: %+v %v", res, err)
	}
	// The same ranking on both sides passes.
	same, err := Evaluate(ctx, set, Options{K: 3}, rankings(good), rankings(good))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := GateSet(g, same); err != nil || !res.Passed || res.Diff != 0 || res.P != 1 {
		t.Fatalf("an equal ranker: %+v %v", res, err)
	}
	// A failed search fails the gate, naming the line; progress counts
	// it as done, every query once, in order.
	delete(bad, "c")
	var seen []int
	rep, err = Evaluate(ctx, set, Options{K: 3, Progress: func(done, total int) {
		if total != 30 {
			t.Errorf("progress total %d, want 30", total)
		}
		seen = append(seen, done)
	}}, rankings(good), rankings(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 30 || seen[0] != 1 || seen[29] != 30 {
		t.Fatalf("progress: %v", seen)
	}
	if _, err := GateSet(g, rep); !errors.Is(err, api.ErrGateFailed) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("failed query: %v", err)
	}
	if live, _ := Values(rep.Queries, NDCG); len(live) != 29 {
		t.Fatalf("the failed query should be left out of both sides: %d", len(live))
	}
	for _, bad := range []api.Gate{{Metric: NDCG}, {Sets: []string{"s"}, Metric: "err"}, {Sets: []string{"s"}, Metric: NDCG, K: -1},
		{Sets: []string{"s"}, Metric: NDCG, MaxDrop: -0.1}, {Sets: []string{"s"}, Metric: NDCG, Confidence: 1}} {
		if err := CheckGate(&bad); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("gate %+v: %v", bad, err)
		}
	}
}

func TestJudgeDecode(t *testing.T) {
	good := `{"q":"pad thai","ratings":{"d1":3,"d2":0}}

{"q":"noodles","filter":{"term":"thai","field":"cuisine"},"context":{"user":"u1"},"ratings":{"d3":1}}
{"query":{"match":"soup"},"ratings":{"d4":2}}
`
	qs, err := Decode(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 || qs[0].Line != 1 || qs[1].Line != 3 || qs[2].Line != 4 || qs[0].Ratings["d1"] != 3 {
		t.Fatalf("%+v", qs)
	}
	for _, c := range []struct{ in, want string }{
		{"", "judgement list is empty"},
		{`{"q":"a","ratings":{"d":5}}`, `line 1: ratings["d"] must be 0 to 3, got 5`},
		{`{"q":"a","ratings":{"d":-1}}`, `line 1: ratings["d"] must be 0 to 3, got -1`},
		{"\n" + `{"q":"a","ratings":{"d":2.5}}`, "line 2: malformed judgement: ratings.d must be an integer"},
		{`{"q":"a"}`, `line 1: "ratings" is required`},
		{`{"q":"a","ratings":{}}`, `line 1: "ratings" is empty`},
		{`{"ratings":{"d":1}}`, `line 1: "q" (or "query") is required`},
		{`{"q":"a","ratings":{"d":1},"rating":{}}`, `line 1: malformed judgement: unknown field "rating"`},
		{`{"q":"a","ratings":{"d":1,"d":2}}`, `line 1: malformed judgement: duplicate field "d"`},
		{`{"q":"a","ratings":{"":1}}`, "line 1: ratings: a document id is empty"},
		{`{"q":"a","context":[1],"ratings":{"d":1}}`, "line 1: context must be a JSON object"},
		{`{"q":"a","ratings":{"d":1}` + "\n{bad\n", "line 2: malformed judgement: invalid JSON"},
		{`{"q":"a","ratings":{"d":1}}` + "\n" + `{"q":"a","ratings":{"e":1}}`, "line 2: the same query as line 1"},
		{"{\"q\":\"a\xff\",\"ratings\":{\"d\":1}}", "line 1: malformed judgement: invalid UTF-8 in q"},
	} {
		_, err := Decode(strings.NewReader(c.in))
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
	// Every bad line is named, up to ten.
	var many strings.Builder
	for range 12 {
		many.WriteString(`{"q":"a","ratings":{"d":9}}` + "\n")
	}
	_, err = Decode(strings.NewReader(many.String()))
	if err == nil || !strings.Contains(err.Error(), "line 10:") || strings.Contains(err.Error(), "line 11:") || !strings.Contains(err.Error(), "and 2 more") {
		t.Fatalf("many: %v", err)
	}
}

func FuzzJudgeDecode(f *testing.F) {
	for _, s := range []string{
		`{"q":"pad thai","ratings":{"d1":3,"d2":0}}`,
		`{"q":"a","filter":{"term":"x"},"context":{"u":1},"ratings":{"d":1}}` + "\n\n" + `{"query":{"match":"b"},"ratings":{"e":2}}`,
		`{"q":"a","ratings":{"d":5}}`,
		`{"q":"a","ratings":{"d":1,"d":1}}`,
		"{bad\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, err := Decode(strings.NewReader(string(b)))
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("not a bad request: %v", err)
			}
			return
		}
		last := 0
		for _, q := range qs {
			if why := Check(&q); why != "" || q.Line <= last {
				t.Fatalf("accepted a bad line %d: %s", q.Line, why)
			}
			last = q.Line
			s := Score([]string{"x"}, q.Ratings, 10)
			for _, v := range []float64{s.NDCG, s.RR, s.Precision, s.Recall} {
				if v < 0 || v > 1 || math.IsNaN(v) {
					t.Fatalf("metric %g out of [0, 1]", v)
				}
			}
		}
	})
}
