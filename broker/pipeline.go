package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Step is one plugin of a pipeline (pipeline.Step).
type Step = pipeline.Step

// Pipeline is an index's plugins: rewriters before the plan, rankers after
// the merge, each in order (pipeline.Pipeline).
type Pipeline = pipeline.Pipeline

// SetPipeline installs an index's pipeline (nil: none), in this broker
// only, outside the registry: for a program that embeds a broker and
// builds its pipelines itself (quarry-bench runs one of native plugins,
// NativePipeline). With WatchPipelines running, the registry's next
// revision of the index replaces it. Requests already running finish with
// the pipeline they started with.
func (b *Broker) SetPipeline(index string, p *Pipeline) { b.pipelines.Set(index, p) }

// PipelineStatus says which pipeline revision the broker runs for each
// index that has one.
func (b *Broker) PipelineStatus() api.PipelineStatus {
	return api.PipelineStatus{Broker: b.id, Revisions: b.pipelines.Revisions()}
}

// answerPipelineStatus answers subject.PipelineStatus requests.
func (b *Broker) answerPipelineStatus(m *nats.Msg) {
	if !b.replies.Allow(m.Subject, m.Reply) {
		return
	}
	raw, err := json.Marshal(b.PipelineStatus())
	if err == nil {
		err = m.Respond(raw)
	}
	if err != nil {
		b.cfg.Logger.Warn("answer pipeline status", "err", err)
	}
}

// stepFailed applies a step's policy to its error: nil to go on (with a
// report of the skipped step), or the query's error.
func (r *run) stepFailed(s *Step, err error) error {
	spec := s.Plugin.Spec()
	if s.Policy == api.FailClosed {
		return api.Errorf(api.CodeUnavailable, "%s %s failed (fail-closed): %v", spec.Kind, spec.Name, err)
	}
	r.reports = append(r.reports, api.StepReport{Plugin: spec.Name, Kind: spec.Kind, Status: "skipped", Error: err.Error()})
	return nil
}

// rewrite runs the rewriter steps on the run's request (changing it),
// adding the plan hints they ask for to its hints. When the run mirrors,
// a live rewriter call whose shadow samples this query is kept in
// r.mirrors, for mirrorRewrites.
func (r *run) rewrite(ctx context.Context, index string, steps []Step) error {
	b, req, hints := r.b, &r.req, r.hints
	for i := range steps {
		if timeUp(ctx) {
			// The request's time ran out (fromRewrite says so): the
			// steps left are not called, so their plugins are not blamed
			// for calls that could not begin.
			return nil
		}
		s, canary := steps[i].Choose(req.Context)
		start := time.Now()
		if s.Disabled() {
			if s.Variant() {
				return s.VariantRefused()
			}
			r.reports = append(r.reports, api.StepReport{Plugin: s.Plugin.Spec().Name, Kind: api.Rewriter, Status: "skipped", Error: "taken out by the automatic fallback"})
			continue
		}
		mirror := r.mirroring && !canary && s.Shadow != nil && rand.IntN(100) < s.ShadowPercent
		if mirror { // the request as this rewriter gets it
			r.mirrors = append(r.mirrors, rewriteMirror{at: i, req: *req, hints: *hints})
		}
		in := plugins.RewriteInput(req)
		out, err := s.Plugin.Rewrite(ctx, &in)
		took := time.Since(start)
		r.cost += took
		b.metrics.step(index, s, took)
		b.observe(index, s, took, err)
		if mirror {
			m := &r.mirrors[len(r.mirrors)-1]
			m.took, m.err = took, err
		}
		if err != nil {
			if err := r.stepFailed(s, err); err != nil {
				return err
			}
			if r.profile {
				r.prelude = append(r.prelude, api.Stage{Name: "rewrite " + s.Plugin.Spec().Name, TookMS: ms(time.Since(start)), Detail: "skipped: " + err.Error()})
			}
			continue
		}
		before := req.Q
		next, nextHints, err := applyRewrite(*req, *hints, out)
		if err != nil {
			if err := r.stepFailed(s, err); err != nil {
				return err
			}
			continue
		}
		*req, *hints = next, nextHints
		if r.profile {
			r.prelude = append(r.prelude, api.Stage{Name: "rewrite " + s.Plugin.Spec().Name, TookMS: ms(time.Since(start)),
				Detail: fmt.Sprintf("%sq %q → %q; query changed %v; filter changed %v; rerank depth %d",
					versionNote(s, canary), before, req.Q, out.Flags&abi.FlagQuery != 0, out.Flags&abi.FlagFilter != 0, out.RerankDepth)})
		}
	}
	return nil
}

// applyRewrite returns req and hints with a rewriter's answer applied, or
// them unchanged and why the answer is wrong.
func applyRewrite(req api.SearchRequest, hints planner.Hints, out *abi.RewriteResponse) (api.SearchRequest, planner.Hints, error) {
	if err := plugins.CheckRewrite(out); err != nil {
		return req, hints, err
	}
	if out.Flags&abi.FlagQ != 0 {
		req.Q = out.Q
	}
	if out.Flags&abi.FlagQuery != 0 {
		req.Query = out.Query
	}
	if out.Flags&abi.FlagFilter != 0 {
		req.Filter = out.Filter
	}
	if out.Flags&abi.FlagRerankDepth != 0 {
		hints.RerankDepth = max(hints.RerankDepth, min(int(out.RerankDepth), api.MaxWindow))
	}
	return req, hints, nil
}

// versionNote says which version of a step ran, in a profile.
func versionNote(s *Step, canary bool) string {
	v := s.Plugin.Spec().Version
	if canary {
		return "canary " + v + ": "
	}
	return "version " + v + ": "
}

// rank runs the rankers over the best candidates (the rest keep their
// place after them), in the run's order of hits.
func (r *run) rank(ctx context.Context) error {
	if !r.plan.Ranking {
		return nil
	}
	start := time.Now()
	defer func() { r.rankTook = time.Since(start) }()
	b, plan, all := r.b, r.plan, r.hits
	for i := range r.pipeline.Rankers {
		s, canary := r.pipeline.Rankers[i].Choose(r.req.Context)
		start := time.Now()
		if timeUp(ctx) {
			// The request's time ran out: not called, so its plugin is
			// not blamed for a call that could not begin.
			if s.Policy == api.FailClosed {
				return api.Errorf(api.CodeTimeout, "the request's time ran out before its ranker %s (fail-closed)", s.Plugin.Spec().Name)
			}
			r.reports = append(r.reports, api.StepReport{Plugin: s.Plugin.Spec().Name, Kind: api.Ranker, Status: "skipped", Error: "the request's time ran out before it"})
			continue
		}
		if s.Disabled() {
			if s.Variant() {
				return s.VariantRefused()
			}
			r.reports = append(r.reports, api.StepReport{Plugin: s.Plugin.Spec().Name, Kind: api.Ranker, Status: "skipped", Error: "taken out by the automatic fallback"})
			continue
		}
		depth := s.RerankDepth
		if depth <= 0 {
			depth = plan.From + plan.Size
		}
		depth = min(depth, len(all))
		if depth == 0 {
			// Nothing matched: nothing to rank, no call to make.
			if r.profile {
				r.rankStages = append(r.rankStages, api.Stage{Name: "rank " + s.Plugin.Spec().Name, Detail: "no candidates: not called"})
			}
			continue
		}
		head, tail := all[:depth], all[depth:]
		in := plugins.RankInput(r.req.Q, r.req.Context, head, s.Fields)
		called := time.Now()
		out, err := r.rankCall(ctx, &r.pipeline.Rankers[i], s, canary, in, head)
		end := time.Now()
		r.cost += end.Sub(called)
		b.observe(plan.Index, s, end.Sub(called), err)
		b.metrics.step(plan.Index, s, end.Sub(start))
		if !canary {
			b.mirror(plan.Index, s, in, out, err, end.Sub(start))
		}
		if err != nil {
			if err := r.stepFailed(s, err); err != nil {
				return err
			}
			if r.profile {
				r.rankStages = append(r.rankStages, api.Stage{Name: "rank " + s.Plugin.Spec().Name, TookMS: ms(time.Since(start)), Detail: "skipped: " + err.Error()})
			}
			continue
		}
		ranked := make([]api.Hit, 0, len(all))
		for _, e := range out.Ranked {
			h := head[e.Index]
			h.Score = e.Score
			ranked = append(ranked, h)
		}
		dropped := len(head) - len(out.Ranked)
		all = append(ranked, tail...)
		if r.profile {
			r.rankStages = append(r.rankStages, api.Stage{Name: "rank " + s.Plugin.Spec().Name, TookMS: ms(time.Since(start)),
				Detail: fmt.Sprintf("%s%d candidates, %d dropped", versionNote(s, canary), depth, dropped)})
		}
	}
	r.hits = all
	return nil
}
