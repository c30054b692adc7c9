package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/tracenats"
)

// judgementName checks a judgement list's name.
func judgementName(name string) error {
	if err := subject.ValidIndexName(name); err != nil {
		return api.BadRequest("judgement list name %q: use 1-64 of a-z, 0-9, '-' and '_'", name)
	}
	return nil
}

// pushJudgements decodes and checks a judgement list (NDJSON, errors by
// line) and stores it as the next version of the index's list of that
// name, owned by the index's team. A refused list changes nothing.
func (s *Service) pushJudgements(ctx context.Context, def api.IndexDefinition, r *Request) (*api.JudgementSet, error) {
	if err := judgementName(r.Name); err != nil {
		return nil, err
	}
	qs, err := relevance.Decode(strings.NewReader(r.NDJSON))
	if err != nil {
		return nil, err
	}
	set, err := s.store.PutJudgementSet(ctx, &api.JudgementSet{Index: def.Name, Name: r.Name, Team: def.TeamOf(), Queries: qs})
	if err != nil {
		return nil, err
	}
	set.Queries = nil // the caller has them
	return set, nil
}

// showJudgements returns one version of a judgement list (0: the latest).
func (s *Service) showJudgements(ctx context.Context, index string, r *Request) (*api.JudgementSet, error) {
	if err := judgementName(r.Name); err != nil {
		return nil, err
	}
	if r.Version < 0 {
		return nil, api.BadRequest("version must be >= 1 (or 0: the latest), got %d", r.Version)
	}
	return s.store.JudgementSet(ctx, index, r.Name, r.Version)
}

// removeJudgements removes a judgement list, unless the index's gate
// uses it.
func (s *Service) removeJudgements(ctx context.Context, index, name string) (map[string]string, error) {
	if err := judgementName(name); err != nil {
		return nil, err
	}
	g, err := s.store.Gate(ctx, index)
	if err != nil {
		return nil, err
	}
	if g != nil && slices.Contains(g.Sets, name) {
		return nil, api.BadRequest("judgement list %s is used by the gate of %q: change the gate first (quarry judgements gate %s --off)", name, index, index)
	}
	if err := s.store.DeleteJudgementSet(ctx, index, name); err != nil {
		return nil, err
	}
	return map[string]string{"removed": name}, nil
}

// gate sets (r.Gate), removes (r.Clear) or shows an index's gate. Its
// sets must exist when it is set.
func (s *Service) gate(ctx context.Context, index string, r *Request) (*api.Gate, error) {
	switch {
	case r.Gate != nil && r.Clear:
		return nil, api.BadRequest("judgements.gate: give a gate or clear, not both")
	case r.Clear:
		return &api.Gate{}, s.store.DeleteGate(ctx, index)
	case r.Gate == nil:
		g, err := s.store.Gate(ctx, index)
		if err == nil && g == nil {
			return nil, api.NotFound("index %q has no relevance gate", index)
		}
		return g, err
	}
	g := *r.Gate
	if err := relevance.CheckGate(&g); err != nil {
		return nil, err
	}
	for _, name := range g.Sets {
		if err := judgementName(name); err != nil {
			return nil, err
		}
		if _, err := s.store.JudgementSet(ctx, index, name, 0); err != nil {
			return nil, err
		}
	}
	slices.Sort(g.Sets)
	g.Sets = slices.Compact(g.Sets)
	if err := s.store.PutGate(ctx, index, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// evaluate runs a judgement list through the live pipeline and, with a
// variant, the candidate beside it.
func (s *Service) evaluate(ctx context.Context, index string, e *api.EvalRequest) (*api.EvalReport, error) {
	if e == nil {
		return nil, api.BadRequest("judgements.eval needs an eval: {\"set\": NAME, \"k\": 10, \"variant\": {...}}")
	}
	if err := judgementName(e.Set); err != nil {
		return nil, err
	}
	o, err := relevance.CheckOptions(relevance.Options{K: e.K, Confidence: e.Confidence})
	if err != nil {
		return nil, err
	}
	var (
		cand    relevance.SearchFunc
		variant *api.Variant
	)
	switch {
	case e.Variant != nil && e.Pipeline != nil:
		return nil, api.BadRequest("give a variant or a pipeline, not both")
	case e.Variant != nil && e.Variant.Pipeline != nil:
		return nil, api.BadRequest("a whole candidate pipeline goes in the eval's pipeline, not its variant")
	case e.Pipeline != nil:
		p := &api.PipelineSpec{Index: index, Rewriters: e.Pipeline.Rewriters, Rankers: e.Pipeline.Rankers}
		if err := s.checkSpec(ctx, index, p); err != nil {
			return nil, err
		}
		variant = &api.Variant{Pipeline: p}
		cand = s.searcher(index, variant)
	}
	if e.Variant != nil {
		if err := validName(e.Variant.Plugin); err != nil {
			return nil, err
		}
		v, err := s.store.ValidPluginVersion(ctx, index, e.Variant.Plugin, e.Variant.Digest)
		if err != nil {
			return nil, err
		}
		variant = &api.Variant{Plugin: v.Name, Digest: v.Digest}
		cand = s.searcher(index, variant)
	}
	set, err := s.store.JudgementSet(ctx, index, e.Set, 0)
	if err != nil {
		return nil, err
	}
	rep, err := relevance.Evaluate(ctx, set, o, s.searcher(index, nil), cand)
	if err != nil {
		return nil, err
	}
	rep.Variant = variant
	return rep, nil
}

// runGate runs the index's gate, if it has one, on a version about to go
// live (activated, or promoted from a canary), records what it found
// with the version, and refuses with a CodeGateFailed error carrying the
// figures when it fails, unless force (with a reason), which records a
// plugin event instead. It returns the result (nil: no gate).
func (s *Service) runGate(ctx context.Context, index string, v *api.PluginVersion, force bool, reason string) (*api.GateResult, error) {
	if err := checkForce(force, reason); err != nil {
		return nil, err
	}
	res, err := s.evaluateGate(ctx, index, &api.Variant{Plugin: v.Name, Digest: v.Digest}, force, reason)
	if err != nil || res == nil {
		return nil, err
	}
	res.Plugin, res.Digest = v.Name, v.Digest
	v.Gate = res
	if err := s.store.PutPluginVersion(ctx, v); err != nil {
		return nil, err
	}
	return res, s.enforceGate(ctx, index, res, fmt.Sprintf("plugin %s %s", v.Name, api.ShortDigest(v.Digest)), v.Name, api.ShortDigest(v.Digest))
}

// runPipelineGate is runGate for a whole pipeline about to replace the
// live one (pipeline.set); the result is stored with the new revision.
func (s *Service) runPipelineGate(ctx context.Context, index string, spec *api.PipelineSpec, force bool, reason string) (*api.GateResult, error) {
	if err := checkForce(force, reason); err != nil {
		return nil, err
	}
	p := &api.PipelineSpec{Index: index, Rewriters: spec.Rewriters, Rankers: spec.Rankers}
	res, err := s.evaluateGate(ctx, index, &api.Variant{Pipeline: p}, force, reason)
	if err != nil || res == nil {
		return nil, err
	}
	res.Plugin = "pipeline"
	return res, s.enforceGate(ctx, index, res, "the pipeline", "pipeline", "set")
}

func checkForce(force bool, reason string) error {
	if force && strings.TrimSpace(reason) == "" {
		return api.BadRequest("--force needs a --reason: it is recorded with the event")
	}
	return nil
}

// evaluateGate runs the index's gate (nil, nil if it has none) on the
// candidate variant against the live pipeline, every set in turn; with
// force, a failed result is marked forced with the reason.
func (s *Service) evaluateGate(ctx context.Context, index string, variant *api.Variant, force bool, reason string) (*api.GateResult, error) {
	g, err := s.store.Gate(ctx, index)
	if err != nil || g == nil {
		return nil, err
	}
	res := &api.GateResult{Time: time.Now().UTC().Truncate(time.Millisecond), Gate: *g, Passed: true}
	cand := s.searcher(index, variant)
	for _, name := range g.Sets {
		sr := api.GateSetResult{Set: name}
		set, err := s.store.JudgementSet(ctx, index, name, 0)
		if err == nil {
			var rep *api.EvalReport
			rep, err = relevance.Evaluate(ctx, set, relevance.Options{K: g.K, Confidence: g.Confidence}, s.searcher(index, nil), cand)
			if err == nil {
				sr, err = relevance.GateSet(g, rep)
			}
		}
		if err != nil {
			if api.CodeOf(err) == api.CodeInternal && ctx.Err() == nil {
				return nil, fmt.Errorf("gate on set %s: %w", name, err)
			}
			sr.Set, sr.Passed, sr.Error = name, false, err.Error()
		}
		res.Sets = append(res.Sets, sr)
		res.Passed = res.Passed && sr.Passed
	}
	if !res.Passed && force {
		res.Forced, res.Reason = true, reason
	}
	return res, nil
}

// enforceGate refuses what (a version, the pipeline) when res failed and
// was not forced, with the figures; a forced one is recorded as a plugin
// event of plugin at version.
func (s *Service) enforceGate(ctx context.Context, index string, res *api.GateResult, what, plugin, version string) error {
	if res.Passed {
		return nil
	}
	figures := relevance.Describe(res)
	for _, sr := range res.Sets {
		if sr.Error != "" {
			figures += "; set " + sr.Set + ": " + sr.Error
		}
	}
	if !res.Forced {
		return &api.Error{Code: api.CodeGateFailed, Gate: res,
			Message: fmt.Sprintf("%s refused by the relevance gate of %q: %s (--force --reason \"...\" overrides)", what, index, figures)}
	}
	s.recordEvent(ctx, api.PluginEvent{Index: index, Plugin: plugin, Version: version, Time: res.Time,
		Event: "gate overridden", Reason: res.Reason + "; " + figures})
	return nil
}

// recordEvent records a plugin event (quarry plugin events), keyed as
// the brokers key theirs.
func (s *Service) recordEvent(ctx context.Context, ev api.PluginEvent) {
	ev.Broker = "registry"
	raw, err := json.Marshal(ev)
	if err == nil {
		_, err = s.store.Events.Put(ctx, fmt.Sprintf("%s.%s.%d", ev.Index, ev.Plugin, ev.Time.UnixNano()), raw)
	}
	if err != nil {
		s.cfg.Logger.Error("record plugin event", "index", ev.Index, "plugin", ev.Plugin, "err", err)
	}
}

// searcher returns a function that searches index through the brokers
// (the public search subject), with variant in place of the live version
// of its plugin when it is not nil: the same path as `quarry plugin
// test`'s replays.
func (s *Service) searcher(index string, variant *api.Variant) relevance.SearchFunc {
	return func(ctx context.Context, req *api.SearchRequest) (*api.SearchResponse, error) {
		req.Variant = variant
		body, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		msg := &nats.Msg{Subject: subject.Search(index), Data: body}
		msg.Header = tracenats.Inject(ctx, msg.Header)
		if msg.Header == nil {
			msg.Header = nats.Header{}
		}
		msg.Header.Set(subject.HeaderInternal, "relevance")
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		reply, err := s.nc.RequestMsgWithContext(sctx, msg)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return nil, api.Errorf(api.CodeUnavailable, "no broker is running")
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			return nil, api.Errorf(api.CodeTimeout, "search %q: %v", index, err)
		case err != nil:
			return nil, fmt.Errorf("search %q: %w", index, err)
		}
		if reply.Header.Get(micro.ErrorHeader) != "" {
			var e api.Error
			if json.Unmarshal(reply.Data, &e) == nil && e.Code != "" {
				return nil, &e
			}
			return nil, api.Errorf(api.CodeUnavailable, "search %q: %s", index, reply.Header.Get(micro.ErrorHeader))
		}
		var resp api.SearchResponse
		if err := json.Unmarshal(reply.Data, &resp); err != nil {
			return nil, fmt.Errorf("decode search response: %w", err)
		}
		return &resp, nil
	}
}

// putEvents stores user events of an index after checking every one: a
// batch with a bad event is refused whole, naming it.
func (s *Service) putEvents(ctx context.Context, def api.IndexDefinition, evs []api.UserEvent) (*api.EventsResult, error) {
	if err := api.ValidateEvents(evs); err != nil {
		return nil, err
	}
	n, err := s.store.PutUserEvents(ctx, def, evs)
	if err != nil {
		return nil, err
	}
	s.credit(ctx, def.Name, evs)
	return &api.EventsResult{Accepted: n}, nil
}

// fromEvents builds a judgement list from an index's user events with
// the position-debiased click model (relevance.FromEvents).
func (s *Service) fromEvents(ctx context.Context, index string, r *api.FromEventsRequest) (*api.FromEventsReport, error) {
	if r == nil {
		r = &api.FromEventsRequest{}
	}
	var since time.Time
	if r.Since != "" {
		d, err := time.ParseDuration(r.Since)
		if err != nil || d <= 0 {
			return nil, api.BadRequest("since must be a positive duration such as 168h, got %q", r.Since)
		}
		since = time.Now().Add(-d)
	}
	if r.MinQueries < 0 || r.Eta < 0 || r.Eta > 4 {
		return nil, api.BadRequest("min_queries must be >= 0 and eta between 0 and 4, got %d and %g", r.MinQueries, r.Eta)
	}
	evs, err := s.store.ReadUserEvents(ctx, index, since)
	if err != nil {
		return nil, err
	}
	qs, skipped := relevance.FromEvents(evs, relevance.ClickModel{Eta: r.Eta, MinQueries: r.MinQueries})
	if qs == nil {
		qs = []api.JudgedQuery{}
	}
	return &api.FromEventsReport{Index: index, Events: len(evs), Queries: qs, Skipped: skipped}, nil
}
