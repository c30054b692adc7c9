package api

import (
	"errors"
	"math"
	"slices"
	"strings"
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

// A team token's scope covers its own and narrower ones; one stored
// without a scope is admin; an unknown stored scope covers nothing a
// scope is needed for.
func TestTokenScopes(t *testing.T) {
	cases := []struct {
		token Token
		of    string
		may   []string // of search, write, admin
	}{
		{Token{Team: "food", Scope: ScopeSearch}, "search", []string{"search"}},
		{Token{Team: "food", Scope: ScopeWrite}, "write", []string{"search", "write"}},
		{Token{Team: "food", Scope: ScopeAdmin}, "admin", []string{"search", "write", "admin"}},
		{Token{Team: "food"}, "admin", []string{"search", "write", "admin"}},
		{Token{Team: "food", Scope: "root"}, "root", nil},
		{Token{Operator: true}, "", nil},
	}
	for _, tc := range cases {
		if got := tc.token.ScopeOf(); got != tc.of {
			t.Errorf("%+v: ScopeOf %q, want %q", tc.token, got, tc.of)
		}
		if tc.token.Operator {
			continue
		}
		for _, need := range TokenScopes {
			if got, want := ScopeCovers(tc.token.ScopeOf(), need), slices.Contains(tc.may, need); got != want {
				t.Errorf("%+v: covers %s: %v, want %v", tc.token, need, got, want)
			}
		}
		if !ScopeCovers(tc.token.ScopeOf(), "") {
			t.Errorf("%+v: does not cover a route that needs no scope", tc.token)
		}
	}
	for _, s := range []string{"", "read", "Admin", "search "} {
		if err := ValidTokenScope(s); err == nil || !strings.Contains(err.Error(), "want search, write, admin") {
			t.Errorf("scope %q: %v", s, err)
		}
	}
}
