package api

import (
	"errors"
	"testing"
)

func TestPipelineStep(t *testing.T) {
	p := &PipelineSpec{Rewriters: []StepSpec{{Plugin: "spelling"}, {Plugin: "synonyms"}}, Rankers: []StepSpec{{Plugin: "ltr"}}}
	for _, tc := range []struct {
		name   string
		found  bool
		ranker bool
	}{{"spelling", true, false}, {"synonyms", true, false}, {"ltr", true, true}, {"nope", false, false}, {"", false, false}} {
		st, ranker := p.Step(tc.name)
		if (st != nil) != tc.found || ranker != tc.ranker || (st != nil && st.Plugin != tc.name) {
			t.Errorf("Step(%q) = %v, %v; want found %v ranker %v", tc.name, st, ranker, tc.found, tc.ranker)
		}
	}
	// The step returned is the pipeline's own: changing it changes the pipeline.
	st, _ := p.Step("ltr")
	st.BudgetMS = 7
	if p.Rankers[0].BudgetMS != 7 {
		t.Error("Step returned a copy")
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
