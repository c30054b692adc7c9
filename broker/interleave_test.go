package broker

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// scored answers a rank request with the candidates at idx, each scored
// base + its index (so that a side's score can be told from the other's).
func scored(base float64, idx ...uint32) func(*abi.RankRequest) []byte {
	return func(*abi.RankRequest) []byte {
		es := make([]abi.Ranked, len(idx))
		for i, x := range idx {
			es[i] = abi.Ranked{Index: x, Score: base + float64(x)}
		}
		return rankAnswer(0, es...)
	}
}

// identity keeps a ranker's candidates in their order; reverse reverses
// them.
func identity(req *abi.RankRequest) []byte {
	return order(seq(len(req.Candidates), false)...)(req)
}

func reverse(req *abi.RankRequest) []byte {
	return order(seq(len(req.Candidates), true)...)(req)
}

// interleaveSteps is a live ranker step ranking live and its interleaving
// canary ranking cand.
func interleaveSteps(t *testing.T, live, cand func(*abi.RankRequest) []byte) (step, canary *Step) {
	t.Helper()
	canary = &Step{Plugin: nativeRanker(t, "ltr", nil, cand)}
	step = &Step{Plugin: nativeRanker(t, "ltr", nil, live), Canary: canary, CanaryPercent: 100,
		Interleave: &pipeline.Interleaving{Live: "sha256:live", Candidate: "sha256:cand"}}
	return step, canary
}

// emitted takes the interleaving records queued for the control-plane
// writer (which is not running).
func emitted(b *Broker) []cpWrite {
	var out []cpWrite
	q := b.cp.lanes[cpInterleaved.lane()].queue
	for {
		select {
		case w := <-q:
			out = append(out, w)
		default:
			return out
		}
	}
}

// candidates is a rank request of n candidates d0..dn-1.
func candidates(n int) *abi.RankRequest {
	in := &abi.RankRequest{Q: "q"}
	for i := range n {
		in.Candidates = append(in.Candidates, abi.Candidate{ID: fmt.Sprint("d", i)})
	}
	return in
}

// Team-draft interleaving of the live and the candidate rankings: every
// candidate either side ranks appears once; each side's best is among the
// first two; each result is credited to the side whose best remaining
// candidate it was when it was placed, keeps that side's score, and the
// sides take turns (neither is ever two picks ahead while both have
// candidates left); the sides of the first results shown are recorded
// under the query id, by document id; the same query id gives the same
// interleaving.
func TestInterleave(t *testing.T) {
	cases := []struct {
		name       string
		n          int
		live, cand []uint32
		shown      int
	}{
		{"same ranking", 6, []uint32{0, 1, 2, 3, 4, 5}, []uint32{0, 1, 2, 3, 4, 5}, 4},
		{"reversed", 6, []uint32{0, 1, 2, 3, 4, 5}, []uint32{5, 4, 3, 2, 1, 0}, 6},
		{"shuffled", 8, []uint32{3, 1, 4, 0, 5, 7, 2, 6}, []uint32{7, 3, 0, 6, 2, 4, 1, 5}, 5},
		{"same best", 5, []uint32{2, 0, 1, 3, 4}, []uint32{2, 4, 3, 1, 0}, 3},
		{"candidate drops some", 6, []uint32{0, 1, 2, 3, 4, 5}, []uint32{4, 1}, 10},
		{"live drops all", 4, nil, []uint32{3, 2, 1, 0}, 2},
		{"disjoint", 6, []uint32{0, 1, 2}, []uint32{3, 4, 5}, 6},
		{"none", 3, nil, nil, 3},
		{"shown 0", 4, []uint32{0, 1, 2, 3}, []uint32{3, 2, 1, 0}, 0},
		{"shown past the cap", 150, seq(150, false), seq(150, true), 200},
	}
	const liveBase, candBase = 1000, 2000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := testBroker(t)
			step, canary := interleaveSteps(t, scored(liveBase, c.live...), scored(candBase, c.cand...))
			in := candidates(c.n)
			for _, qid := range []string{"q1", "q2", "q3", "q4"} {
				ctx := withQueryID(context.Background(), qid)
				out, err := b.interleave(ctx, "menu", step, canary, in, in, c.shown)
				if err != nil {
					t.Fatal(err)
				}
				again, err := b.interleave(ctx, "menu", step, canary, in, in, c.shown)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out.Ranked, again.Ranked) {
					t.Fatalf("%s: two interleavings for one query id:\n%v\n%v", qid, out.Ranked, again.Ranked)
				}
				recs := emitted(b)
				if len(recs) != 2 {
					t.Fatalf("%s: %d records emitted for two searches", qid, len(recs))
				}
				w := recs[0]
				if w.kind != cpInterleaved || w.index != "menu" || w.plugin != "ltr" || w.qid != qid ||
					w.rec.Plugin != "ltr" || w.rec.Live != "sha256:live" || w.rec.Candidate != "sha256:cand" {
					t.Fatalf("%s: record %+v %+v", qid, w, w.rec)
				}
				checkTeamDraft(t, c.live, c.cand, out.Ranked, w.rec.Teams, in, c.shown, liveBase, candBase)
			}
		})
	}
}

// checkTeamDraft checks an interleaving out of live and cand, and the
// sides recorded (teams, by document id) for the first shown results.
func checkTeamDraft(t *testing.T, live, cand []uint32, out []abi.Ranked, teams map[string]uint8, in *abi.RankRequest, shown int, liveBase, candBase float64) {
	t.Helper()
	union := map[uint32]bool{}
	for _, x := range append(slices.Clone(live), cand...) {
		union[x] = true
	}
	if len(out) != len(union) {
		t.Fatalf("%d results, want the %d candidates either side ranks: %v", len(out), len(union), out)
	}
	top := func(r []uint32) {
		if len(r) > 0 && !slices.ContainsFunc(out[:min(2, len(out))], func(e abi.Ranked) bool { return e.Index == r[0] }) {
			t.Fatalf("%d, a side's best, is not among the first two: %v", r[0], out)
		}
	}
	top(live)
	top(cand)

	placed := map[uint32]bool{}
	best := func(r []uint32) (uint32, bool) { // the side's best candidate not placed yet
		for _, x := range r {
			if !placed[x] {
				return x, true
			}
		}
		return 0, false
	}
	var nLive, nCand int
	wantTeams := map[string]uint8{}
	for p, e := range out {
		if placed[e.Index] {
			t.Fatalf("position %d repeats %d: %v", p, e.Index, out)
		}
		lb, lok := best(live)
		cb, cok := best(cand)
		var team uint8
		switch {
		case lok && e.Index == lb && e.Score == liveBase+float64(e.Index):
			team, nLive = uint8(relevance.TeamLive), nLive+1
		case cok && e.Index == cb && e.Score == candBase+float64(e.Index):
			team, nCand = uint8(relevance.TeamCandidate), nCand+1
		default:
			t.Fatalf("position %d: %+v is neither the live side's best left (%d, %v) with its score nor the candidate's (%d, %v)", p, e, lb, lok, cb, cok)
		}
		if lok && cok && (nLive-nCand > 1 || nCand-nLive > 1) {
			t.Fatalf("position %d: %d live picks, %d candidate picks", p, nLive, nCand)
		}
		placed[e.Index] = true
		if p < shown && p < pipeline.MaxInterleavedShown {
			wantTeams[in.Candidates[e.Index].ID] = team
		}
	}
	if len(teams) != len(wantTeams) {
		t.Fatalf("%d sides recorded, want %d (shown %d)", len(teams), len(wantTeams), shown)
	}
	for id, team := range wantTeams {
		if teams[id] != team {
			t.Fatalf("%s recorded as side %d, placed by side %d", id, teams[id], team)
		}
	}
}

// The coin differs between query ids: over many, both sides go first.
// Without a query id nothing is recorded.
func TestInterleaveQueryIDs(t *testing.T) {
	b := testBroker(t)
	step, canary := interleaveSteps(t, scored(0, 0, 1, 2, 3), scored(0, 3, 2, 1, 0))
	in := candidates(4)
	firsts := map[uint32]int{}
	for i := range 64 {
		out, err := b.interleave(withQueryID(context.Background(), fmt.Sprint("query-", i)), "menu", step, canary, in, in, 4)
		if err != nil {
			t.Fatal(err)
		}
		firsts[out.Ranked[0].Index]++
	}
	if len(firsts) != 2 || firsts[0] < 10 || firsts[3] < 10 {
		t.Fatalf("first results over 64 query ids: %v; want each side's best first about half the time", firsts)
	}
	emitted(b)
	if _, err := b.interleave(context.Background(), "menu", step, canary, in, in, 4); err != nil {
		t.Fatal(err)
	}
	if recs := emitted(b); len(recs) != 0 {
		t.Fatalf("recorded without a query id: %+v", recs)
	}
}

// Either side failing fails the step; nothing is recorded.
func TestInterleaveFailure(t *testing.T) {
	fail := func(*abi.RankRequest) []byte { return abi.AppendError(nil, "broken") }
	ok := scored(0, 0, 1)
	for _, c := range []struct {
		name       string
		live, cand func(*abi.RankRequest) []byte
	}{{"live fails", fail, ok}, {"candidate fails", ok, fail}} {
		t.Run(c.name, func(t *testing.T) {
			b := testBroker(t)
			step, canary := interleaveSteps(t, c.live, c.cand)
			if _, err := b.interleave(withQueryID(context.Background(), "q"), "menu", step, canary, candidates(2), candidates(2), 2); err == nil {
				t.Fatal("no error")
			}
			if recs := emitted(b); len(recs) != 0 {
				t.Fatalf("recorded: %+v", recs)
			}
		})
	}
}

// Through the rank stage: a canary that interleaves gives the page both
// versions' interleaving and records the sides of from+size results; a
// plain canary replaces the live ranker.
func TestRankStageInterleaves(t *testing.T) {
	liveRec, candRec := &recorder{}, &recorder{}
	canary := &Step{Plugin: nativeRanker(t, "ltr", candRec, reverse)}
	step := Step{Plugin: nativeRanker(t, "ltr", liveRec, identity), Canary: canary, CanaryPercent: 100,
		Interleave: &pipeline.Interleaving{Live: "sha256:live", Candidate: "sha256:cand"}}
	r := rankRun(t, step, 1, 2, rankHits())
	if err := r.rank(withQueryID(context.Background(), "q1")); err != nil {
		t.Fatal(err)
	}
	if len(liveRec.ranks) != 1 || len(candRec.ranks) != 1 {
		t.Fatalf("calls: live %d, candidate %d", len(liveRec.ranks), len(candRec.ranks))
	}
	got := ids(r.hits)
	if len(got) != 5 || !slices.Contains(got[:2], "d0") || !slices.Contains(got[:2], "d2") {
		// The depth is from+size, 3: live ranks d0 d1 d2, the canary d2 d1 d0; d3 d4 follow.
		t.Fatalf("hits %v", got)
	}
	if got[3] != "d3" || got[4] != "d4" {
		t.Fatalf("the candidates past the depth moved: %v", got)
	}
	recs := emitted(r.b)
	if len(recs) != 1 || len(recs[0].rec.Teams) != 3 || recs[0].qid != "q1" {
		t.Fatalf("records %+v", recs)
	}

	// A plain canary: only the canary ranks.
	liveRec.ranks, candRec.ranks = nil, nil
	step.Interleave = nil
	r = rankRun(t, step, 0, 5, rankHits())
	if err := r.rank(withQueryID(context.Background(), "q2")); err != nil {
		t.Fatal(err)
	}
	if len(liveRec.ranks) != 0 || len(candRec.ranks) != 1 || !slices.Equal(ids(r.hits), []string{"d4", "d3", "d2", "d1", "d0"}) {
		t.Fatalf("plain canary: live calls %d, canary calls %d, hits %v", len(liveRec.ranks), len(candRec.ranks), ids(r.hits))
	}
	if recs := emitted(r.b); len(recs) != 0 {
		t.Fatalf("a plain canary recorded %+v", recs)
	}
}

// An interleaving runs both versions on the same candidates, each with
// the fields it reads (a new version may read other fields than the live
// one).
func TestRankStageInterleaveFields(t *testing.T) {
	liveRec, candRec := &recorder{}, &recorder{}
	canary := &Step{Plugin: nativeRanker(t, "ltr", candRec, reverse), Fields: []string{"name", "price"}}
	step := Step{Plugin: nativeRanker(t, "ltr", liveRec, identity), Fields: []string{"price"}, Canary: canary, CanaryPercent: 100,
		Interleave: &pipeline.Interleaving{Live: "sha256:live", Candidate: "sha256:cand"}}
	r := rankRun(t, step, 0, 3, rankHits())
	if err := r.rank(withQueryID(context.Background(), "q1")); err != nil {
		t.Fatal(err)
	}
	check := func(who string, rec *recorder, fields []string) {
		t.Helper()
		in := rec.lastRank(t)
		if !slices.Equal(in.Fields, fields) || len(in.Candidates) != 3 {
			t.Fatalf("the %s version got fields %v and %d candidates, want %v and 3", who, in.Fields, len(in.Candidates), fields)
		}
		for i, c := range in.Candidates {
			h := rankHits()[i]
			for j, f := range fields {
				if want := plugins.ValueOf(h.Fields[f]); !reflect.DeepEqual(c.Values[j], want) || c.ID != h.ID {
					t.Fatalf("the %s version's candidate %d: %+v, want %s %s=%+v", who, i, c, h.ID, f, want)
				}
			}
		}
	}
	check("live", liveRec, []string{"price"})
	check("candidate", candRec, []string{"name", "price"})
	if got := ids(r.hits); len(got) != 5 || !slices.Contains(got[:2], "d0") || !slices.Contains(got[:2], "d2") {
		t.Fatalf("hits %v", got)
	}
}
