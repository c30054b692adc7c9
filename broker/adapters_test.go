package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// rankAnswer encodes a rank response as a guest writes it, entries as
// given (so that a test can send what a well-behaved SDK would refuse to
// encode: NaN, repeated or invented indexes).
func rankAnswer(flags uint8, entries ...abi.Ranked) []byte {
	b := []byte{abi.StatusOK, flags}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint32(b, e.Index)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Score))
	}
	return b
}

// recorder is a native plugin that keeps every request it decodes and
// answers each call with answer(request) (raw response bytes).
type recorder struct {
	mu       sync.Mutex
	rewrites []abi.RewriteRequest
	ranks    []abi.RankRequest
}

func (r *recorder) lastRank(t *testing.T) abi.RankRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ranks) == 0 {
		t.Fatal("the ranker was not called")
	}
	return r.ranks[len(r.ranks)-1]
}

func (r *recorder) lastRewrite(t *testing.T) abi.RewriteRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rewrites) == 0 {
		t.Fatal("the rewriter was not called")
	}
	return r.rewrites[len(r.rewrites)-1]
}

// nativeRanker loads a native ranker (the same encoding, decoding and
// checks as a WebAssembly one) answering answer(req); rec, if set, keeps
// the requests.
func nativeRanker(t *testing.T, name string, rec *recorder, answer func(req *abi.RankRequest) []byte) *plugins.Plugin {
	t.Helper()
	p, err := plugins.LoadNative(plugins.Spec{Name: name, Version: "v1", Kind: plugins.Ranker, Budget: 5 * time.Second, Instances: 2},
		func([]byte) (plugins.NativeHandler, error) {
			return func(in, out []byte) []byte {
				var req abi.RankRequest
				if err := abi.DecodeRankRequest(in, &req); err != nil {
					return abi.AppendError(out, "decode: "+err.Error())
				}
				if rec != nil {
					rec.mu.Lock()
					rec.ranks = append(rec.ranks, req)
					rec.mu.Unlock()
				}
				return append(out, answer(&req)...)
			}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// nativeRewriter loads a native rewriter answering answer(req).
func nativeRewriter(t *testing.T, name string, rec *recorder, answer func(req *abi.RewriteRequest) []byte) *plugins.Plugin {
	t.Helper()
	p, err := plugins.LoadNative(plugins.Spec{Name: name, Version: "v1", Kind: plugins.Rewriter, Budget: 5 * time.Second, Instances: 2},
		func([]byte) (plugins.NativeHandler, error) {
			return func(in, out []byte) []byte {
				var req abi.RewriteRequest
				if err := abi.DecodeRewriteRequest(in, &req); err != nil {
					return abi.AppendError(out, "decode: "+err.Error())
				}
				if rec != nil {
					rec.mu.Lock()
					rec.rewrites = append(rec.rewrites, req)
					rec.mu.Unlock()
				}
				return append(out, answer(&req)...)
			}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// testBroker is a broker that is not connected to anything: enough for a
// run's rewrite and rank stages, shadows and interleaving.
func testBroker(t *testing.T) *Broker {
	t.Helper()
	b, err := New(nil, nil, Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The rewriter answer applied to a request and its hints: each flag sets
// its field, and only its field; a query that is not JSON changes
// nothing; the rerank depth only raises the hint, up to api.MaxWindow.
func TestApplyRewrite(t *testing.T) {
	base := func() (api.SearchRequest, planner.Hints) {
		return api.SearchRequest{Q: "pad thai", Query: json.RawMessage(`{"match":"a"}`), Filter: json.RawMessage(`{"term":"x"}`),
			Context: json.RawMessage(`{"user":"u1"}`), From: 20, Size: 10, Fields: []string{"name"}}, planner.Hints{RerankDepth: 50}
	}
	cases := []struct {
		name    string
		out     abi.RewriteResponse
		wantErr bool
		want    func(*api.SearchRequest, *planner.Hints)
	}{
		{"no flags: no change", abi.RewriteResponse{Q: "ignored", Query: []byte(`{}`), RerankDepth: 900}, false, nil},
		{"q", abi.RewriteResponse{Flags: abi.FlagQ, Q: "pad see ew"}, false,
			func(r *api.SearchRequest, _ *planner.Hints) { r.Q = "pad see ew" }},
		{"q emptied", abi.RewriteResponse{Flags: abi.FlagQ}, false,
			func(r *api.SearchRequest, _ *planner.Hints) { r.Q = "" }},
		{"query", abi.RewriteResponse{Flags: abi.FlagQuery, Query: []byte(`{"match":"b"}`)}, false,
			func(r *api.SearchRequest, _ *planner.Hints) { r.Query = json.RawMessage(`{"match":"b"}`) }},
		{"query removed", abi.RewriteResponse{Flags: abi.FlagQuery}, false,
			func(r *api.SearchRequest, _ *planner.Hints) { r.Query = nil }},
		{"filter", abi.RewriteResponse{Flags: abi.FlagFilter, Filter: []byte(`{"term":"y"}`)}, false,
			func(r *api.SearchRequest, _ *planner.Hints) { r.Filter = json.RawMessage(`{"term":"y"}`) }},
		{"deeper rerank", abi.RewriteResponse{Flags: abi.FlagRerankDepth, RerankDepth: 200}, false,
			func(_ *api.SearchRequest, h *planner.Hints) { h.RerankDepth = 200 }},
		{"shallower rerank keeps the deeper hint", abi.RewriteResponse{Flags: abi.FlagRerankDepth, RerankDepth: 5}, false, nil},
		{"rerank capped", abi.RewriteResponse{Flags: abi.FlagRerankDepth, RerankDepth: math.MaxUint32}, false,
			func(_ *api.SearchRequest, h *planner.Hints) { h.RerankDepth = api.MaxWindow }},
		{"everything", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagQuery | abi.FlagFilter | abi.FlagRerankDepth,
			Q: "noodles", Query: []byte(`{"match":"c"}`), Filter: []byte(`{"term":"z"}`), RerankDepth: 60}, false,
			func(r *api.SearchRequest, h *planner.Hints) {
				r.Q, r.Query, r.Filter, h.RerankDepth = "noodles", json.RawMessage(`{"match":"c"}`), json.RawMessage(`{"term":"z"}`), 60
			}},
		{"query not JSON: nothing changes", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagQuery | abi.FlagRerankDepth,
			Q: "x", Query: []byte(`{"match":`), RerankDepth: 400}, true, nil},
		{"filter not JSON: nothing changes", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagFilter,
			Q: "x", Filter: []byte(`{"term":`)}, true, nil},
		{"q not UTF-8: the plugin's malformed output", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagRerankDepth,
			Q: "pad \xff thai", RerankDepth: 400}, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, hints := base()
			wantReq, wantHints := base()
			if c.want != nil {
				c.want(&wantReq, &wantHints)
			}
			req, hints, err := applyRewrite(req, hints, &c.out)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want an error: %v", err, c.wantErr)
			}
			gotJ, _ := json.Marshal(req)
			wantJ, _ := json.Marshal(wantReq)
			if string(gotJ) != string(wantJ) || !reflect.DeepEqual(hints, wantHints) {
				t.Fatalf("got\n%s %+v\nwant\n%s %+v", gotJ, hints, wantJ, wantHints)
			}
		})
	}
}

// rewriteAnswer encodes a rewrite response.
func rewriteAnswer(out abi.RewriteResponse) []byte {
	return abi.AppendRewriteResponse(nil, &out)
}

// Rewriters through the run: each gets the request as the caller gave it
// and the rewriters before it left it (q, query, filter, context, page
// size and offset), its answer is applied, and an answer that is wrong
// (a query that is not JSON, unknown flags, a plugin error) skips the
// step (fail-open) or fails the query (fail-closed) without changing the
// request.
func TestRewriteStage(t *testing.T) {
	req := api.SearchRequest{Q: "thai", Query: json.RawMessage(`{"match":"thai"}`), Filter: json.RawMessage(`{"term":{"veg":true}}`),
		Context: json.RawMessage(`{"user":"u1"}`), From: 30, Size: 15}
	wantIn := abi.RewriteRequest{Q: "thai", Query: req.Query, Filter: req.Filter, Context: req.Context, From: 30, Size: 15}
	bad := map[string][]byte{
		"query not JSON": rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagQuery, Q: "x", Query: []byte("not json")}),
		"unknown flag":   {abi.StatusOK, 0x80},
		"plugin error":   abi.AppendError(nil, "no"),
		"trailing bytes": append(rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ, Q: "x"}), 0),
	}
	for name, answer := range bad {
		for _, policy := range []api.Policy{api.FailOpen, api.FailClosed} {
			t.Run(fmt.Sprintf("%s %s", name, policy), func(t *testing.T) {
				rec := &recorder{}
				p := nativeRewriter(t, "bad", rec, func(*abi.RewriteRequest) []byte { return answer })
				r := &run{b: testBroker(t), req: req, hints: &planner.Hints{RerankDepth: 7}}
				err := r.rewrite(context.Background(), "idx", []Step{{Plugin: p, Policy: policy}})
				if policy == api.FailClosed {
					if err == nil || !strings.Contains(err.Error(), "fail-closed") {
						t.Fatalf("fail-closed step: error %v", err)
					}
				} else if err != nil || len(r.reports) != 1 || r.reports[0].Status != "skipped" || r.reports[0].Plugin != "bad" {
					t.Fatalf("fail-open step: error %v, reports %+v", err, r.reports)
				}
				gotJ, _ := json.Marshal(r.req)
				wantJ, _ := json.Marshal(req)
				if string(gotJ) != string(wantJ) || r.hints.RerankDepth != 7 {
					t.Fatalf("a refused answer changed the request: %s, hints %+v", gotJ, *r.hints)
				}
				if got := rec.lastRewrite(t); !rewriteEqual(got, wantIn) {
					t.Fatalf("the rewriter got %+v, want %+v", got, wantIn)
				}
			})
		}
	}

	t.Run("two rewriters in order", func(t *testing.T) {
		first, second := &recorder{}, &recorder{}
		p1 := nativeRewriter(t, "first", first, func(in *abi.RewriteRequest) []byte {
			return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagFilter | abi.FlagRerankDepth,
				Q: in.Q + " noodles", Filter: []byte(`{"term":{"veg":false}}`), RerankDepth: 80})
		})
		p2 := nativeRewriter(t, "second", second, func(in *abi.RewriteRequest) []byte {
			return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQuery | abi.FlagRerankDepth, Query: []byte(`{"match":"` + in.Q + `"}`), RerankDepth: 40})
		})
		r := &run{b: testBroker(t), req: req, hints: &planner.Hints{RerankDepth: 7}, execOptions: execOptions{profile: true}}
		if err := r.rewrite(context.Background(), "idx", []Step{{Plugin: p1}, {Plugin: p2}}); err != nil {
			t.Fatal(err)
		}
		if got := first.lastRewrite(t); !rewriteEqual(got, wantIn) {
			t.Fatalf("the first rewriter got %+v, want %+v", got, wantIn)
		}
		want2 := wantIn
		want2.Q, want2.Filter = "thai noodles", []byte(`{"term":{"veg":false}}`)
		if got := second.lastRewrite(t); !rewriteEqual(got, want2) {
			t.Fatalf("the second rewriter got %+v, want %+v", got, want2)
		}
		want := req
		want.Q, want.Filter, want.Query = "thai noodles", json.RawMessage(`{"term":{"veg":false}}`), json.RawMessage(`{"match":"thai noodles"}`)
		gotJ, _ := json.Marshal(r.req)
		wantJ, _ := json.Marshal(want)
		if string(gotJ) != string(wantJ) || r.hints.RerankDepth != 80 {
			t.Fatalf("after the rewriters: %s, hints %+v; want %s, depth 80", gotJ, *r.hints, wantJ)
		}
		if len(r.prelude) != 2 || !strings.Contains(r.prelude[0].Detail, `"thai" → "thai noodles"`) {
			t.Fatalf("profile: %+v", r.prelude)
		}
	})

	t.Run("default page size reaches the rewriter", func(t *testing.T) {
		rec := &recorder{}
		p := nativeRewriter(t, "noop", rec, func(*abi.RewriteRequest) []byte { return rewriteAnswer(abi.RewriteResponse{}) })
		r := &run{b: testBroker(t), req: api.SearchRequest{Q: "x"}, hints: &planner.Hints{}}
		if err := r.rewrite(context.Background(), "idx", []Step{{Plugin: p}}); err != nil {
			t.Fatal(err)
		}
		if got := rec.lastRewrite(t); got.Size != uint32(r.req.EffectiveSize()) || got.Size == 0 || got.From != 0 {
			t.Fatalf("size %d from %d, want the effective size %d", got.Size, got.From, r.req.EffectiveSize())
		}
	})
}

func rewriteEqual(a, b abi.RewriteRequest) bool {
	return a.Q == b.Q && string(a.Query) == string(b.Query) && string(a.Filter) == string(b.Filter) &&
		string(a.Context) == string(b.Context) && a.Size == b.Size && a.From == b.From
}

// rankHits are five candidates, best first, with a price and a name.
func rankHits() []api.Hit {
	var out []api.Hit
	for i := range 5 {
		out = append(out, api.Hit{ID: fmt.Sprint("d", i), Score: float64(10 - i),
			Fields: map[string]any{"price": float64(i) + 0.5, "name": fmt.Sprint("dish ", i)}})
	}
	return out
}

// rankRun is a run at the rank stage over hits, with one ranker step.
func rankRun(t *testing.T, s Step, from, size int, hits []api.Hit) *run {
	t.Helper()
	return &run{b: testBroker(t), req: api.SearchRequest{Q: "thai", Context: json.RawMessage(`{"user":"u1"}`)},
		plan: &planner.Plan{Index: "idx", From: from, Size: size, Ranking: true}, execOptions: execOptions{pipeline: &Pipeline{Rankers: []Step{s}}}, hits: hits}
}

// hitsOf picks hits of rankHits by index, with new scores.
func hitsOf(pairs ...any) []api.Hit {
	all := rankHits()
	var out []api.Hit
	for i := 0; i < len(pairs); i += 2 {
		h := all[pairs[i].(int)]
		h.Score = pairs[i+1].(float64)
		out = append(out, h)
	}
	return out
}

// A ranker through the run: it gets q, the context, the fields it reads
// and, for the first rerank-depth candidates (from+size by default), their
// ids, scores and field values, in order; its order and scores replace
// the candidates' (with their fields and ids kept), the ones it leaves
// out are dropped, the candidates past the depth keep their place after
// them; an answer the ABI refuses (an index it invents or repeats, a NaN
// or infinite score) skips the step (fail-open: the order is unchanged)
// or fails the query (fail-closed).
func TestRankStage(t *testing.T) {
	e := func(i uint32, s float64) abi.Ranked { return abi.Ranked{Index: i, Score: s} }
	cases := []struct {
		name       string
		depth      int // the step's RerankDepth
		from, size int
		answer     []byte
		wantSent   int       // candidates the ranker gets
		want       []api.Hit // nil: the step fails, the hits are unchanged
	}{
		{"reverse with new scores", 0, 0, 3, rankAnswer(0, e(2, 7), e(1, 6.5), e(0, -1)), 3,
			append(hitsOf(2, 7.0, 1, 6.5, 0, -1.0), rankHits()[3:]...)},
		{"depth from from+size", 0, 2, 2, rankAnswer(0, e(3, 1), e(0, 2), e(1, 3), e(2, 4)), 4,
			append(hitsOf(3, 1.0, 0, 2.0, 1, 3.0, 2, 4.0), rankHits()[4:]...)},
		{"step depth", 2, 0, 5, rankAnswer(0, e(1, 0), e(0, 0)), 2,
			append(hitsOf(1, 0.0, 0, 0.0), rankHits()[2:]...)},
		{"depth past the candidates", 50, 0, 3, rankAnswer(0, e(4, 5), e(3, 4), e(2, 3), e(1, 2), e(0, 1)), 5,
			hitsOf(4, 5.0, 3, 4.0, 2, 3.0, 1, 2.0, 0, 1.0)},
		{"dropped candidates", 0, 0, 3, rankAnswer(0, e(2, 1)), 3,
			append(hitsOf(2, 1.0), rankHits()[3:]...)},
		{"all dropped", 0, 0, 3, rankAnswer(0), 3, rankHits()[3:]},
		{"sort by score", 0, 0, 3, rankAnswer(abi.RankSortByScore, e(0, 1), e(1, 3), e(2, 2)), 3,
			append(hitsOf(1, 3.0, 2, 2.0, 0, 1.0), rankHits()[3:]...)},
		{"negative zero and tiny scores pass", 0, 0, 2, rankAnswer(0, e(1, math.Copysign(0, -1)), e(0, math.SmallestNonzeroFloat64)), 2,
			append(hitsOf(1, math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64), rankHits()[2:]...)},
		{"invented candidate", 0, 0, 3, rankAnswer(0, e(0, 1), e(3, 2)), 3, nil},
		{"far invented candidate", 0, 0, 3, rankAnswer(0, e(math.MaxUint32, 2)), 3, nil},
		{"repeated candidate", 0, 0, 3, rankAnswer(0, e(1, 1), e(1, 2)), 3, nil},
		{"NaN score", 0, 0, 3, rankAnswer(0, e(0, math.NaN())), 3, nil},
		{"+Inf score", 0, 0, 3, rankAnswer(0, e(0, 1), e(1, math.Inf(1))), 3, nil},
		{"-Inf score", 0, 0, 3, rankAnswer(0, e(0, math.Inf(-1))), 3, nil},
		{"more entries than candidates", 0, 0, 2, rankAnswer(0, e(0, 1), e(1, 1), e(2, 1)), 2, nil},
		{"unknown flag", 0, 0, 3, rankAnswer(0x02, e(0, 1)), 3, nil},
		{"plugin error", 0, 0, 3, abi.AppendError(nil, "model not loaded"), 3, nil},
	}
	for _, c := range cases {
		for _, policy := range []api.Policy{api.FailOpen, api.FailClosed} {
			if c.want != nil && policy == api.FailClosed {
				continue
			}
			t.Run(fmt.Sprintf("%s %s", c.name, policy), func(t *testing.T) {
				rec := &recorder{}
				p := nativeRanker(t, "ltr", rec, func(*abi.RankRequest) []byte { return c.answer })
				r := rankRun(t, Step{Plugin: p, Policy: policy, Fields: []string{"price", "name", "missing"}, RerankDepth: c.depth}, c.from, c.size, rankHits())
				err := r.rank(context.Background())

				in := rec.lastRank(t)
				if in.Q != "thai" || string(in.Context) != `{"user":"u1"}` || !slices.Equal(in.Fields, []string{"price", "name", "missing"}) ||
					len(in.Candidates) != c.wantSent {
					t.Fatalf("the ranker got q %q context %s fields %v and %d candidates, want %d", in.Q, in.Context, in.Fields, len(in.Candidates), c.wantSent)
				}
				for i, cand := range in.Candidates {
					h := rankHits()[i]
					v := cand.Values
					if cand.ID != h.ID || cand.Score != h.Score || len(v) != 3 ||
						v[0].Kind != abi.KindNumber || v[0].Num != h.Fields["price"] ||
						v[1].Kind != abi.KindString || v[1].Str != h.Fields["name"] || v[2].Kind != abi.KindMissing {
						t.Fatalf("candidate %d: got %+v, want %+v", i, cand, h)
					}
				}

				want := c.want
				if want == nil {
					want = rankHits()
					if policy == api.FailClosed {
						if err == nil || !strings.Contains(err.Error(), "fail-closed") {
							t.Fatalf("fail-closed: error %v", err)
						}
					} else if err != nil || len(r.reports) != 1 || r.reports[0].Status != "skipped" {
						t.Fatalf("fail-open: error %v, reports %+v", err, r.reports)
					}
				} else if err != nil || len(r.reports) != 0 {
					t.Fatalf("error %v, reports %+v", err, r.reports)
				}
				if !sameHits(r.hits, want) {
					t.Fatalf("hits\n%v\nwant\n%v", r.hits, want)
				}
			})
		}
	}
}

// sameHits compares ids, scores (bit for bit) and fields.
func sameHits(a, b []api.Hit) bool {
	return slices.EqualFunc(a, b, func(x, y api.Hit) bool {
		return x.ID == y.ID && math.Float64bits(x.Score) == math.Float64bits(y.Score) && fmt.Sprint(x.Fields) == fmt.Sprint(y.Fields)
	})
}

// No candidates: the ranker is not called. Two rankers: the second ranks
// the first's order and scores.
func TestRankStageChain(t *testing.T) {
	called := false
	p := nativeRanker(t, "never", nil, func(*abi.RankRequest) []byte { called = true; return rankAnswer(0) })
	r := rankRun(t, Step{Plugin: p}, 0, 10, nil)
	if err := r.rank(context.Background()); err != nil || called || len(r.hits) != 0 {
		t.Fatalf("no candidates: error %v, called %v, hits %v", err, called, r.hits)
	}

	rev := func(req *abi.RankRequest) []byte { // reverse, score = old score × 2
		var es []abi.Ranked
		for i := len(req.Candidates) - 1; i >= 0; i-- {
			es = append(es, abi.Ranked{Index: uint32(i), Score: req.Candidates[i].Score * 2})
		}
		return rankAnswer(0, es...)
	}
	second := &recorder{}
	r = rankRun(t, Step{Plugin: nativeRanker(t, "first", nil, rev)}, 0, 4, rankHits())
	r.pipeline.Rankers = append(r.pipeline.Rankers, Step{Plugin: nativeRanker(t, "second", second, rev), RerankDepth: 2})
	if err := r.rank(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := second.lastRank(t)
	if len(in.Candidates) != 2 || in.Candidates[0].ID != "d3" || in.Candidates[0].Score != 14 || in.Candidates[1].ID != "d2" {
		t.Fatalf("the second ranker got %+v", in.Candidates)
	}
	// first: d3 14, d2 16, d1 18, d0 20, d4 6; second over the first two: d2 32, d3 28.
	if want := append(hitsOf(2, 32.0, 3, 28.0, 1, 18.0, 0, 20.0), hitsOf(4, 6.0)...); !sameHits(r.hits, want) {
		t.Fatalf("hits\n%v\nwant\n%v", r.hits, want)
	}
}

// rankWAT is a WebAssembly ranker from the ABI alone that answers every
// call with the same bytes, from a data segment.
func rankWAT(t *testing.T, answer []byte) *plugins.Plugin {
	t.Helper()
	return fixedWAT(t, plugins.Ranker, answer)
}

// fixedWAT is a WebAssembly plugin of kind from the ABI alone that answers
// every call with the same bytes, from a data segment.
func fixedWAT(t *testing.T, kind plugins.Kind, answer []byte) *plugins.Plugin {
	t.Helper()
	export := abi.ExportRank
	if kind == plugins.Rewriter {
		export = abi.ExportRewrite
	}
	var data strings.Builder
	for _, c := range answer {
		fmt.Fprintf(&data, `\%02x`, c)
	}
	wasm := wasmtest.WAT(t, fmt.Sprintf(`(module
  (memory 2)
  (data (i32.const 4096) "%s")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 8192))
  (func (export "%s") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const %d))))`, data.String(), export, len(answer)))
	rt, err := plugins.NewRuntime(context.Background(), plugins.Config{MemoryLimitPages: 16, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	p, err := rt.Load(context.Background(), plugins.Spec{Name: "wat", Kind: kind, Budget: 5 * time.Second, Instances: 1}, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A WebAssembly ranker's answer comes back as a native one's: applied
// when good, refused when it invents, repeats or gives a NaN.
func TestRankStageWebAssembly(t *testing.T) {
	e := func(i uint32, s float64) abi.Ranked { return abi.Ranked{Index: i, Score: s} }
	cases := []struct {
		name   string
		answer []byte
		want   []api.Hit
	}{
		{"reorder", rankAnswer(0, e(1, 3), e(0, 2)), append(hitsOf(1, 3.0, 0, 2.0), rankHits()[2:]...)},
		{"invented", rankAnswer(0, e(1, 3), e(2, 2)), rankHits()},
		{"repeated", rankAnswer(0, e(0, 3), e(0, 2)), rankHits()},
		{"NaN", rankAnswer(0, e(0, math.NaN())), rankHits()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rankRun(t, Step{Plugin: rankWAT(t, c.answer)}, 0, 2, rankHits())
			if err := r.rank(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !sameHits(r.hits, c.want) {
				t.Fatalf("hits\n%v\nwant\n%v (reports %+v)", r.hits, c.want, r.reports)
			}
		})
	}
}

// Planning for the rankers (the pipeline's Ranking, the planner's plan):
// the shards return the fields the rankers read
// that the caller did not ask for (removed from the page later), and as
// many candidates as the deepest rerank depth (at most the index's
// window). A ranker's canary takes the place of the live version on its
// share of the queries, so its fields and depth count too. (A shadow
// reorders the live version's input: its own do not.)
func TestPlannedForRankers(t *testing.T) {
	cases := []struct {
		name      string
		asked     []string
		size      int
		rankers   []Step
		wantExtra []string
		wantK     int
	}{
		{"fields and depth", []string{"name"}, 10,
			[]Step{{Fields: []string{"price", "name"}, RerankDepth: 50}, {Fields: []string{"rating", "price"}, RerankDepth: 20}},
			[]string{"price", "rating"}, 50},
		{"all fields asked", []string{"*"}, 10, []Step{{Fields: []string{"price"}}}, nil, 10},
		{"depth capped by the window", nil, 10, []Step{{RerankDepth: 5000}}, nil, 1000},
		{"size 0: no ranking", nil, 0, []Step{{Fields: []string{"price"}, RerankDepth: 50}}, nil, 0},
		{"canary's fields", []string{"name"}, 10,
			[]Step{{Fields: []string{"price"}, Canary: &Step{Fields: []string{"price", "rating"}}, CanaryPercent: 10}},
			[]string{"price", "rating"}, 10},
		{"canary's depth", nil, 10,
			[]Step{{RerankDepth: 50, Canary: &Step{RerankDepth: 200}, CanaryPercent: 10}}, nil, 200},
		{"shadow's own are not fetched", nil, 10,
			[]Step{{Fields: []string{"price"}, Shadow: &Step{Fields: []string{"rating"}, RerankDepth: 300}, ShadowPercent: 10}},
			[]string{"price"}, 10},
	}
	p, err := planner.New(planner.Config{})
	if err != nil {
		t.Fatal(err)
	}
	def := api.IndexDefinition{Name: "idx", Shards: 2, Query: api.QuerySettings{Limits: api.QueryLimits{MaxWindow: 1000}}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := api.SearchRequest{Q: "thai", Size: c.size, Fields: c.asked}
			if c.size == 0 {
				req.Size = api.NoHits
			}
			plan, err := p.Plan(&req, def, &planner.Hints{Ranking: (&Pipeline{Rankers: c.rankers}).Ranking()})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plan.ExtraFields, c.wantExtra) || plan.K != c.wantK || plan.Ranking != (c.size > 0) ||
				!slices.Equal(plan.Fields, append(slices.Clone(c.asked), c.wantExtra...)) {
				t.Fatalf("extra fields %v, K %d, fields %v, ranking %v; want extra %v, K %d", plan.ExtraFields, plan.K, plan.Fields, plan.Ranking, c.wantExtra, c.wantK)
			}
		})
	}
}

// A WebAssembly rewriter's answer is applied as a native one's, and
// refused as one when its query is not JSON.
func TestRewriteStageWebAssembly(t *testing.T) {
	cases := []struct {
		name   string
		answer abi.RewriteResponse
		want   func(*api.SearchRequest, *planner.Hints)
	}{
		{"q, filter and depth", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagFilter | abi.FlagRerankDepth, Q: "pad see ew", Filter: []byte(`{"term":"v"}`), RerankDepth: 90},
			func(r *api.SearchRequest, h *planner.Hints) {
				r.Q, r.Filter, h.RerankDepth = "pad see ew", json.RawMessage(`{"term":"v"}`), 90
			}},
		{"query not JSON", abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagQuery, Q: "x", Query: []byte("{")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := api.SearchRequest{Q: "thai", Context: json.RawMessage(`{"u":1}`), Size: 5}
			r := &run{b: testBroker(t), req: req, hints: &planner.Hints{}}
			if err := r.rewrite(context.Background(), "idx", []Step{{Plugin: fixedWAT(t, plugins.Rewriter, rewriteAnswer(c.answer))}}); err != nil {
				t.Fatal(err)
			}
			want, wantHints := req, planner.Hints{}
			if c.want != nil {
				c.want(&want, &wantHints)
			} else if len(r.reports) != 1 || r.reports[0].Status != "skipped" {
				t.Fatalf("reports %+v", r.reports)
			}
			gotJ, _ := json.Marshal(r.req)
			wantJ, _ := json.Marshal(want)
			if string(gotJ) != string(wantJ) || !reflect.DeepEqual(*r.hints, wantHints) {
				t.Fatalf("got %s %+v, want %s %+v", gotJ, *r.hints, wantJ, wantHints)
			}
		})
	}
}
