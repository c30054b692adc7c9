package broker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/rankcmp"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// mirror runs a ranker step's shadow on the same input, if it has one and
// this query is sampled, after the live call, in the background; it never
// delays the query.
func (b *Broker) mirror(index string, s *Step, req *abi.RankRequest, live *abi.RankResponse, liveErr error, liveTook time.Duration) {
	if s.Shadow == nil || rand.IntN(100) >= s.ShadowPercent {
		return
	}
	b.shadows.Run(func(ctx context.Context) {
		start := time.Now()
		out, err := s.Shadow.Plugin.Rank(ctx, req)
		r := pipeline.ShadowResult{LiveTook: liveTook, ShadowTook: time.Since(start), LiveErr: liveErr != nil, ShadowErr: err != nil}
		if liveErr == nil && err == nil {
			r.Compared = true
			a, b := rankedIndexes(live.Ranked), rankedIndexes(out.Ranked)
			r.Overlap, r.Rho = rankcmp.OverlapAt(shadowTop, a, b), rankcmp.Spearman(a, b)
		}
		b.shadows.Add(index+"."+s.Plugin.Spec().Name, r)
	})
}

// rewriteMirror is a live rewriter call whose shadow a query samples.
type rewriteMirror struct {
	at    int               // the rewriter's place in the pipeline
	req   api.SearchRequest // the request as the rewriter got it
	hints planner.Hints     // the hints of the rewriters before it
	took  time.Duration     // the live call
	err   error
}

// mirrorRewrites runs, in the background, the shadows of the rewriters
// whose calls a query sampled (see shadowRewrite), against live, the
// query's response (nil if it failed: then only the calls are compared).
// It never delays the query: a shadow that finds the broker busy with
// pipeline.MaxShadowCalls others is dropped.
func (b *Broker) mirrorRewrites(index string, def api.IndexDefinition, pl *Pipeline, mirrors []rewriteMirror, live *api.SearchResponse) {
	if len(mirrors) == 0 {
		return
	}
	var liveTop []string
	if live != nil {
		liveTop = live.IDs(shadowTop)
	}
	for _, m := range mirrors {
		if !b.shadows.Run(func(ctx context.Context) { b.shadowRewrite(ctx, index, def, pl, m, liveTop, live != nil) }) {
			return // busy: skip these mirrors
		}
	}
}

// shadowRewrite runs a rewriter's shadow on the request the live rewriter
// got and, if both calls succeeded and the live query did (compare), the
// rest of the search for the candidate's request: the later rewriters,
// the plan, the fan-out, the merge and the live rankers, none of which
// count toward the live steps' health or mirror anything. The final top
// 10 is compared with the live one's, liveTop. A failed shadow search
// counts as a shadow error; nothing of it reaches the live query.
func (b *Broker) shadowRewrite(ctx context.Context, index string, def api.IndexDefinition, pl *Pipeline, m rewriteMirror, liveTop []string, compare bool) {
	live := &pl.Rewriters[m.at]
	req, hints := m.req, m.hints
	in := plugins.RewriteInput(&req)
	start := time.Now()
	out, err := live.Shadow.Plugin.Rewrite(ctx, &in)
	r := pipeline.ShadowResult{LiveTook: m.took, ShadowTook: time.Since(start), LiveErr: m.err != nil}
	if err == nil {
		req, hints, err = applyRewrite(req, hints, out)
	}
	if err == nil && m.err == nil && compare {
		var top []string
		if top, err = b.shadowSearch(ctx, index, def, pipeline.Quiet(pl.Rewriters[m.at+1:]), pipeline.Quiet(pl.Rankers), req, hints); err == nil {
			r.Compared = true
			r.Overlap, r.Rho = rankcmp.OverlapAt(shadowTop, liveTop, top), rankcmp.Spearman(liveTop, top)
		}
	}
	if err != nil {
		r.ShadowErr = true
		b.cfg.Logger.Debug("rewriter shadow failed", "index", index, "plugin", live.Plugin.Spec().Name, "err", err)
	}
	b.shadows.Add(index+"."+live.Plugin.Spec().Name, r)
}

// shadowSearch runs the rest of a search for a shadow rewriter's request:
// the rewriters after it, the plan, and the execution with the rankers,
// and returns the ids of its top 10. Stored fields, facets, explanations
// and highlights are not asked for: only the order is compared.
func (b *Broker) shadowSearch(ctx context.Context, index string, def api.IndexDefinition, rewriters, rankers []Step, req api.SearchRequest, hints planner.Hints) ([]string, error) {
	req.Fields, req.Facets, req.Profile, req.Explain, req.Highlight = nil, nil, false, false, nil
	if p := req.PIT; p != nil {
		// The live search's point in time: read, never opened (that is the
		// live search's) nor closed (the live search may have).
		req.PIT = nil
		if p.ID != "" && !p.Close {
			req.PIT = &api.PITRequest{ID: p.ID, KeepAlive: p.KeepAlive}
		}
	}
	r := &run{b: b, def: def, execOptions: execOptions{start: time.Now()}, req: req, hints: &hints}
	if len(rankers) > 0 {
		r.pipeline = &Pipeline{Rankers: rankers}
	}
	resp, err := r.fromRewrite(ctx, index, rewriters)
	if err != nil {
		return nil, err
	}
	return resp.IDs(shadowTop), nil
}

// shadowTop is the k of a shadow's overlap@k: the first page.
const shadowTop = 10

// rankedIndexes is a ranker's order as candidate indexes.
func rankedIndexes(r []abi.Ranked) []uint32 {
	out := make([]uint32, len(r))
	for i, e := range r {
		out[i] = e.Index
	}
	return out
}

// publishShadows writes this broker's tallies to the shadow bucket every
// interval until ctx is done.
func (b *Broker) publishShadows(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed := b.shadows.Changed()
		if changed == nil {
			continue
		}
		for k, v := range changed {
			raw, _ := json.Marshal(v)
			if _, err := b.store.Shadow.Put(ctx, k+"."+b.id, raw); err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("publish shadow tallies", "err", err)
			}
		}
	}
}
