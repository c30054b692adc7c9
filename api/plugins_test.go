package api

import (
	"errors"
	"math"
	"testing"
)

func TestPipelineStep(t *testing.T) {
	p := &PipelineSpec{Rewriters: []StepSpec{{Plugin: "spelling"}, {Plugin: "synonyms"}}, Rankers: []StepSpec{{Plugin: "ltr"}}}
	for _, tc := range []struct {
		name  string
		found bool
		kind  StepKind
	}{{"spelling", true, Rewriter}, {"synonyms", true, Rewriter}, {"ltr", true, Ranker}, {"nope", false, ""}, {"", false, ""}} {
		st, kind := p.Step(tc.name)
		if (st != nil) != tc.found || kind != tc.kind || (st != nil && st.Plugin != tc.name) {
			t.Errorf("Step(%q) = %v, %q; want found %v kind %q", tc.name, st, kind, tc.found, tc.kind)
		}
		for _, k := range []StepKind{Rewriter, Ranker} {
			if got := p.StepOf(k, tc.name); (got != nil) != (tc.found && k == tc.kind) || (got != nil && got != st) {
				t.Errorf("StepOf(%q, %q) = %v, want the step of Step only if it is a %s", k, tc.name, got, k)
			}
		}
	}
	// The step returned is the pipeline's own: changing it changes the pipeline.
	st, _ := p.Step("ltr")
	st.BudgetMS = 7
	if p.Rankers[0].BudgetMS != 7 {
		t.Error("Step returned a copy")
	}
	*p.Steps(Ranker) = append(*p.Steps(Ranker), StepSpec{Plugin: "georank"})
	if len(p.Rankers) != 2 || len(p.Rewriters) != 2 {
		t.Errorf("Steps(Ranker) is not the pipeline's rankers: %d rankers, %d rewriters", len(p.Rankers), len(p.Rewriters))
	}
	for _, k := range []StepKind{Rewriter, Ranker} {
		if err := k.Check(); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []StepKind{"", "Ranker", "filter"} {
		if err := k.Check(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("kind %q: %v, want a bad request", k, err)
		}
	}
}

func TestPolicyAndShortDigest(t *testing.T) {
	for _, p := range []Policy{"", FailOpen, FailClosed} {
		if err := p.Check(); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	if err := Policy("fail-sometimes").Check(); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a bad policy: %v", err)
	}
	for in, want := range map[string]string{"sha256:0123456789abcdef": "0123456789ab", "0123": "0123", "sha256:": "", "": ""} {
		if got := ShortDigest(in); got != want {
			t.Errorf("ShortDigest(%q) = %q, want %q", in, got, want)
		}
	}
}

// A team's rate is 0 (no cap) or from one search a minute to a million a
// second; NaN, negatives and rates that would shut the team out are
// refused.
func TestTeamRateBounds(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		ok   bool
	}{
		{0, true}, {MinTeamRate, true}, {0.0167, true}, {2, true}, {MaxTeamRate, true},
		{-1, false}, {1e-9, false}, {0.0166, false}, {MaxTeamRate * 2, false}, {math.NaN(), false}, {math.Inf(1), false},
	} {
		err := (&TeamSettings{Name: "t", Rate: tc.rate}).Validate()
		if (err == nil) != tc.ok {
			t.Errorf("rate %g: %v, want ok=%v", tc.rate, err, tc.ok)
		}
	}
}
