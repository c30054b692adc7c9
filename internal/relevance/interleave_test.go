package relevance

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestJudgeTeamDraft(t *testing.T) {
	// The same rankings: every position is the shared order; teams
	// alternate in pairs (each pair one live, one candidate).
	order, teams := TeamDraft([]int{0, 1, 2, 3}, []int{0, 1, 2, 3}, 7)
	if !slices.Equal(order, []int{0, 1, 2, 3}) {
		t.Fatalf("order %v", order)
	}
	for p := 0; p < 4; p += 2 {
		if teams[p] == teams[p+1] || teams[p] == TeamNone {
			t.Fatalf("teams %v: each pair should have one of each", teams)
		}
	}
	// Opposite rankings: the first pick of each side is its best.
	order, teams = TeamDraft([]int{0, 1, 2}, []int{2, 1, 0}, 1)
	if len(order) != 3 {
		t.Fatalf("order %v", order)
	}
	first := map[Team]int{teams[0]: order[0], teams[1]: order[1]}
	if first[TeamLive] != 0 || first[TeamCandidate] != 2 {
		t.Fatalf("order %v teams %v", order, teams)
	}
	// Seeded; every candidate placed once; a candidate only one side has.
	o1, t1 := TeamDraft([]int{0, 1, 2, 3, 4}, []int{4, 3, 5}, 99)
	o2, t2 := TeamDraft([]int{0, 1, 2, 3, 4}, []int{4, 3, 5}, 99)
	if !slices.Equal(o1, o2) || !slices.Equal(t1, t2) {
		t.Fatal("not deterministic")
	}
	s := slices.Clone(o1)
	slices.Sort(s)
	if !slices.Equal(s, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("order %v", o1)
	}
	// Fair: over many seeds, with the same rankings, each side places the
	// top result about half the time.
	live := 0
	for seed := range uint64(2000) {
		if _, tm := TeamDraft([]int{0, 1}, []int{0, 1}, seed); tm[0] == TeamLive {
			live++
		}
	}
	if live < 900 || live > 1100 {
		t.Fatalf("the live side went first %d times in 2000", live)
	}
}

func TestJudgeSequential(t *testing.T) {
	s := Sequential{}.WithDefaults()
	// ln(19) / ln(0.6/0.4) = 7.26: eight more wins than losses decide.
	upper, lower := s.Bounds()
	if math.Abs(upper-math.Log(19)) > 1e-12 || math.Abs(lower+math.Log(19)) > 1e-12 {
		t.Fatalf("bounds %g %g", upper, lower)
	}
	for _, c := range []struct{ w, l, want int }{{7, 0, Undecided}, {8, 0, Better}, {10, 2, Better}, {0, 8, Worse}, {5, 12, Undecided}, {1000, 1000, NoDifference}} {
		if got := s.Decide(c.w, c.l); got != c.want {
			t.Errorf("W %d L %d: %d, want %d", c.w, c.l, got, c.want)
		}
	}
	// Wald's bound on the error: a candidate worse by delta is called
	// better under alpha of the time.
	wrong := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		w, l := 0, 0
		for s.Decide(w, l) == Undecided {
			if rng.Float64() < 0.4 {
				w++
			} else {
				l++
			}
		}
		if s.Decide(w, l) == Better {
			wrong++
		}
	}
	if wrong > 100 { // alpha 5% of 2000
		t.Fatalf("a worse candidate won %d times in 2000", wrong)
	}
	if bad := (Sequential{Delta: 0.7}).WithDefaults(); bad.Valid() == "" || s.Valid() != "" {
		t.Fatal("Valid")
	}
}
