package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// defaultSamples are run on every version, whatever else: an ordinary
// query, an empty one and one with a location word.
var defaultSamples = []api.SearchRequest{{Q: "sample query"}, {Q: ""}, {Q: "spicy noodles near me"}}

// sampleCandidates is how many of the index's own documents a ranker is
// validated on per sample request.
const sampleCandidates = 20

// validate compiles the plugin, checks its ABI and imports, and runs it
// within its budget on sample requests: the team's own (samples), the
// index's recorded queries (when brokers record them) and a few defaults.
// A ranker ranks the index's own documents for each request (the live
// search's top hits with the fields it reads), or made-up candidates when
// the index cannot be searched. A refusal names the sample that failed.
func (s *Service) validate(ctx context.Context, team string, v *api.PluginVersion, wasm []byte, samples []api.SearchRequest) error {
	spec := plugins.SpecOf(v.Kind, api.ShortDigest(v.Digest), v.Step)
	spec.Name, spec.Instances = v.Name, 1
	rt, err := s.teams.Runtime(ctx, team)
	if err != nil {
		return err
	}
	// The instance's first call may pay the plugin's own setup (its
	// configuration read on first use, as the SDK's examples do), which a
	// loaded machine can take past a budget of milliseconds: it is held
	// to the start budget, and every later call to the step's, timed
	// here (one instance: later calls are warm).
	budget := cmp.Or(spec.Budget, plugins.DefaultBudget)
	spec.Budget = max(budget, min(cmp.Or(spec.InitBudget, plugins.DefaultInitBudget), rt.MaxBudget()))
	p, err := rt.Load(ctx, spec, wasm)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer p.Close(ctx)
	type sample struct {
		from string
		req  api.SearchRequest
	}
	var all []sample
	for i, r := range samples {
		all = append(all, sample{fmt.Sprintf("your sample %d", i+1), r})
	}
	recorded, err := s.store.RecordedQueries(ctx, v.Index, api.MaxValidationSamples)
	if err != nil {
		s.cfg.Logger.Warn("validation without recorded queries", "index", v.Index, "err", err)
	}
	for i, raw := range recorded {
		var r api.SearchRequest
		if json.Unmarshal(raw, &r) == nil {
			all = append(all, sample{fmt.Sprintf("recorded query %d", i+1), r})
		}
	}
	for i, r := range defaultSamples {
		all = append(all, sample{fmt.Sprintf("default sample %d", i+1), r})
	}
	for i, smp := range all {
		start := time.Now()
		var err error
		var what string // the sample, for a refusal
		if v.Kind == api.Rewriter {
			in := plugins.RewriteInput(&smp.req)
			var out *abi.RewriteResponse
			if out, err = p.Rewrite(ctx, &in); err == nil {
				err = plugins.CheckRewrite(out)
			}
			what = fmt.Sprintf("%s (q %q)", smp.from, clip(smp.req.Q))
		} else {
			req := plugins.RankInput(smp.req.Q, smp.req.Context, s.candidates(ctx, v.Index, smp.req, v.Step.Fields), v.Step.Fields)
			start = time.Now() // the candidates' search is not the plugin's
			_, err = p.Rank(ctx, req)
			what = fmt.Sprintf("%s (q %q, %d candidates)", smp.from, clip(smp.req.Q), len(req.Candidates))
		}
		var ce *plugins.CallError
		switch took := time.Since(start); {
		case err == nil && i > 0 && took > budget:
			err = &plugins.CallError{Plugin: v.Name, Kind: plugins.KindTimeout, Err: fmt.Errorf("budget of %s exceeded (took %s)", budget, took.Round(time.Millisecond))}
		case i == 0 && errors.As(err, &ce) && ce.Kind == plugins.KindTimeout:
			err = fmt.Errorf("its first call (the plugin's setup), held to the start budget of %s: %w", spec.Budget, err)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// candidates returns the index's top documents for a sample request (its
// text, query, filter and context), with the fields a ranker reads,
// through the live search API; made-up ones if the search fails or finds
// nothing.
func (s *Service) candidates(ctx context.Context, index string, r api.SearchRequest, fields []string) []api.Hit {
	body, _ := json.Marshal(api.SearchRequest{Q: r.Q, Query: r.Query, Filter: r.Filter, Context: r.Context, Size: sampleCandidates, Fields: fields})
	var resp api.SearchResponse
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := &nats.Msg{Subject: subject.Search(index), Data: body, Header: nats.Header{subject.HeaderInternal: []string{"validation"}}}
	if msg, err := s.nc.RequestMsgWithContext(sctx, req); err == nil && msg.Header.Get(micro.ErrorHeader) == "" {
		if json.Unmarshal(msg.Data, &resp) == nil && len(resp.Hits) > 0 {
			return resp.Hits
		}
	}
	out := make([]api.Hit, sampleCandidates)
	for i := range out {
		out[i] = api.Hit{ID: fmt.Sprintf("sample-%d", i), Score: 1 / float64(i+1)}
	}
	return out
}

// clip shortens a query for an error message.
func clip(q string) string {
	if len(q) <= 60 {
		return q
	}
	return q[:57] + "..."
}
