package pipeline

import (
	"cmp"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
)

// Step is one plugin of a pipeline.
type Step struct {
	Plugin *plugins.Plugin
	Policy api.Policy
	// Fields are the stored fields a ranker reads (added to the shard
	// requests, removed from hits the caller did not ask them for).
	Fields []string
	// RerankDepth is how many merged candidates a ranker sees (default:
	// from+size).
	RerankDepth int
	// Canary, when set, takes CanaryPercent of the queries, chosen by
	// the request context's StickyKey field (random without one).
	Canary        *Step
	CanaryPercent int
	StickyKey     string
	// Shadow, when set, runs on ShadowPercent of the queries after the
	// live step, in the background; its results are only compared. A
	// ranker's shadow reorders the live ranker's candidates; a rewriter's
	// rewrites the request the live rewriter got, and the rest of the
	// search runs again for it.
	Shadow        *Step
	ShadowPercent int
	// LatencyBudget, when set, is the call time the automatic fallback
	// holds the step to (see FallbackLimits).
	LatencyBudget time.Duration
	// Interleave, when set, makes the canary an interleaving experiment
	// (Interleave).
	Interleave *Interleaving

	health *health // set for registry pipelines: automatic fallback
	// quiet marks the copy of a step a shadow search runs: its calls do
	// not count toward the live step's health.
	quiet bool
	// variant marks a step of a variant search (a replay, an evaluation's
	// candidate): its health is the variants' (Loader.variantHealth), and
	// once it trips the step is refused (VariantRefused), not skipped.
	variant bool
}

// stepOf is the step of spec running p, without the automatic fallback
// (no health), canary or shadow.
func stepOf(p *plugins.Plugin, spec api.StepSpec) Step {
	return Step{Plugin: p, Policy: cmp.Or(spec.Policy, api.FailOpen), Fields: spec.Fields, RerankDepth: spec.RerankDepth,
		LatencyBudget: time.Duration(spec.LatencyBudgetMS) * time.Millisecond}
}

// Choose picks the live step or its canary for one request, whose
// context is rctx; it reports whether it chose the canary.
func (s *Step) Choose(rctx []byte) (*Step, bool) {
	if s.Canary == nil || s.CanaryPercent <= 0 {
		return s, false
	}
	bucket := rand.IntN(100)
	if s.StickyKey != "" && len(rctx) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(rctx, &m) == nil {
			if v, ok := m[s.StickyKey]; ok {
				h := fnv.New32a()
				h.Write([]byte(s.Plugin.Spec().Name))
				h.Write(v)
				bucket = int(h.Sum32() % 100)
			}
		}
	}
	if bucket < s.CanaryPercent {
		return s.Canary, true
	}
	return s, false
}

// Quiet reports whether s is a shadow search's copy of a step (Quiet):
// its calls are neither observed nor counted toward the live step's
// health.
func (s *Step) Quiet() bool { return s.quiet }

// Disabled reports whether the automatic fallback took the step out.
func (s *Step) Disabled() bool { return s.health != nil && s.health.disabled.Load() }

// Variant reports whether s is a step of a variant search (a replay or an
// evaluation's candidate): one that the fallback took out (Disabled) must
// fail the search (VariantRefused) rather than be skipped, since a
// candidate without it is not the candidate asked for.
func (s *Step) Variant() bool { return s.variant }

// VariantRefused is the error of a variant search whose step the
// automatic fallback took out of variant searches.
func (s *Step) VariantRefused() error {
	spec := s.Plugin.Spec()
	return api.Errorf(api.CodeUnavailable, "variant %s %s version %s was taken out of variant searches by the automatic fallback until %s: %s",
		spec.Kind, spec.Name, spec.Version, s.health.until().UTC().Format(time.RFC3339), s.health.why())
}

// Quiet copies steps for a shadow search: no shadows of their own, and
// calls that do not count toward the live steps' health (a step the
// fallback took out stays out).
func Quiet(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, s := range steps {
		s.Shadow, s.quiet = nil, true
		if s.Canary != nil {
			c := *s.Canary
			c.Shadow, c.quiet = nil, true
			s.Canary = &c
		}
		out[i] = s
	}
	return out
}

// Pipeline is an index's plugins: rewriters before the plan, rankers after
// the merge, each in order.
type Pipeline struct {
	Rewriters []Step
	Rankers   []Step
}

// Ranking is what the pipeline's rankers need of a plan (nil without
// rankers): the deepest rerank depth and every field they read, a
// canary's included (it ranks in its live version's place); a shadow's
// are not fetched (it ranks what the live ranker got).
func (p *Pipeline) Ranking() *planner.Ranking {
	if len(p.Rankers) == 0 {
		return nil
	}
	rk := &planner.Ranking{}
	for _, s := range p.Rankers {
		rk.Depth = max(rk.Depth, s.RerankDepth)
		fields := s.Fields
		if s.Canary != nil {
			rk.Depth = max(rk.Depth, s.Canary.RerankDepth)
			fields = append(slices.Clip(fields), s.Canary.Fields...)
		}
		for _, f := range fields {
			if !slices.Contains(rk.Fields, f) {
				rk.Fields = append(rk.Fields, f)
			}
		}
	}
	return rk
}

// Plugins yields every plugin of the pipeline, canaries and shadows
// included.
func (p *Pipeline) Plugins(yield func(*plugins.Plugin) bool) {
	var walk func(s *Step) bool
	walk = func(s *Step) bool {
		if s == nil || s.Plugin == nil {
			return true
		}
		return yield(s.Plugin) && walk(s.Canary) && walk(s.Shadow)
	}
	for _, steps := range [][]Step{p.Rewriters, p.Rankers} {
		for i := range steps {
			if !walk(&steps[i]) {
				return
			}
		}
	}
}
