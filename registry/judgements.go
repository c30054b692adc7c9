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

// checkForce refuses a force without a reason.
func checkForce(force bool, reason string) error {
	if force && strings.TrimSpace(reason) == "" {
		return api.BadRequest("--force needs a --reason: it is recorded with the event")
	}
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
