package broker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/rankcmp"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// maxShadowCalls bounds shadow calls running at once, ranker calls and
// rewriter shadow searches alike: mirrored work is dropped rather than
// queued when the broker is busy.
const maxShadowCalls = 4

// shadowTimeout bounds one mirrored call, or one rewriter's shadow search
// (which also keeps to the query's own timeout).
const shadowTimeout = 5 * time.Second

type shadowTally = api.ShadowTally

// shadows holds the broker's tallies and publishes them to the shadow
// bucket, where the admin API sums every broker's.
type shadows struct {
	id    string
	sem   chan struct{}
	mu    sync.Mutex
	tally map[string]*shadowTally // <index>.<plugin>
	dirty bool
}

func newShadows() *shadows {
	return &shadows{id: nuid.Next(), sem: make(chan struct{}, maxShadowCalls), tally: map[string]*shadowTally{}}
}

// mirror runs a ranker step's shadow on the same input, if it has one and
// this query is sampled, after the live call, in the background; it never
// delays the query.
func (b *Broker) mirror(index string, s *Step, req *abi.RankRequest, live *abi.RankResponse, liveErr error, liveTook time.Duration) {
	if s.Shadow == nil || rand.IntN(100) >= s.ShadowPercent {
		return
	}
	b.shadows.run(func(ctx context.Context) {
		start := time.Now()
		out, err := s.Shadow.Plugin.Rank(ctx, req)
		r := shadowResult{liveTook: liveTook, shadowTook: time.Since(start), liveErr: liveErr != nil, shadowErr: err != nil}
		if liveErr == nil && err == nil {
			r.compared = true
			a, b := rankedIndexes(live.Ranked), rankedIndexes(out.Ranked)
			r.overlap, r.rho = rankcmp.OverlapAt(shadowTop, a, b), rankcmp.Spearman(a, b)
		}
		b.shadows.add(index+"."+s.Plugin.Spec().Name, r)
	})
}

// run runs f in the background with a shadow's time bound, if fewer than
// maxShadowCalls shadows are running; otherwise it drops it (mirrored work
// is never queued) and reports false.
func (sh *shadows) run(f func(ctx context.Context)) bool {
	select {
	case sh.sem <- struct{}{}:
	default:
		return false
	}
	go func() {
		defer func() { <-sh.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), shadowTimeout)
		defer cancel()
		f(ctx)
	}()
	return true
}

// shadowResult is one mirrored query's comparison.
type shadowResult struct {
	liveTook, shadowTook time.Duration
	liveErr, shadowErr   bool
	// compared: both succeeded, and overlap and rho are set.
	compared     bool
	overlap, rho float64
}

// add sums one comparison into the tally of key (<index>.<plugin>).
func (sh *shadows) add(key string, r shadowResult) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.tally[key]
	if t == nil {
		t = &shadowTally{}
		sh.tally[key] = t
	}
	sh.dirty = true
	t.Calls++
	t.LiveNS += r.liveTook.Nanoseconds()
	t.ShadowNS += r.shadowTook.Nanoseconds()
	if r.liveErr {
		t.LiveErrors++
	}
	if r.shadowErr {
		t.ShadowErrors++
	}
	if r.compared {
		t.Queries++
		t.OverlapSum += r.overlap
		t.RhoSum += r.rho
	}
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
// maxShadowCalls others is dropped.
func (b *Broker) mirrorRewrites(index string, def api.IndexDefinition, pl *Pipeline, mirrors []rewriteMirror, live *api.SearchResponse) {
	if len(mirrors) == 0 {
		return
	}
	var liveTop []string
	if live != nil {
		liveTop = topIDs(live.Hits)
	}
	for _, m := range mirrors {
		if !b.shadows.run(func(ctx context.Context) { b.shadowRewrite(ctx, index, def, pl, m, liveTop, live != nil) }) {
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
	r := shadowResult{liveTook: m.took, shadowTook: time.Since(start), liveErr: m.err != nil}
	if err == nil {
		err = applyRewrite(&req, &hints, out)
	}
	if err == nil && m.err == nil && compare {
		var top []string
		if top, err = b.shadowSearch(ctx, index, def, pipeline.Quiet(pl.Rewriters[m.at+1:]), pipeline.Quiet(pl.Rankers), &req, &hints); err == nil {
			r.compared = true
			r.overlap, r.rho = rankcmp.OverlapAt(shadowTop, liveTop, top), rankcmp.Spearman(liveTop, top)
		}
	}
	if err != nil {
		r.shadowErr = true
		b.cfg.Logger.Debug("rewriter shadow failed", "index", index, "plugin", live.Plugin.Spec().Name, "err", err)
	}
	b.shadows.add(index+"."+live.Plugin.Spec().Name, r)
}

// shadowSearch runs the rest of a search for a shadow rewriter's request:
// the rewriters after it, the plan, and the execution with the rankers,
// and returns the ids of its top 10. Stored fields and facets are not
// asked for: only the order is compared.
func (b *Broker) shadowSearch(ctx context.Context, index string, def api.IndexDefinition, rewriters, rankers []Step, req *api.SearchRequest, hints *planner.Hints) ([]string, error) {
	req.Fields, req.Facets, req.Profile = nil, nil, false
	r := &run{b: b, execOptions: execOptions{start: time.Now()}, req: *req, hints: hints}
	if err := r.rewrite(ctx, index, rewriters); err != nil {
		return nil, err
	}
	plan, err := b.planner.Plan(&r.req, def, r.hints)
	if err != nil {
		return nil, err
	}
	if len(rankers) > 0 {
		r.pipeline = &Pipeline{Rankers: rankers}
	}
	resp, err := r.execute(ctx, plan)
	if err != nil {
		return nil, err
	}
	return topIDs(resp.Hits), nil
}

// shadowTop is the k of a shadow's overlap@k: the first page.
const shadowTop = 10

// topIDs returns the ids of the first shadowTop hits.
func topIDs(hits []api.Hit) []string {
	ids := make([]string, min(shadowTop, len(hits)))
	for i := range ids {
		ids[i] = hits[i].ID
	}
	return ids
}

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
		b.shadows.mu.Lock()
		if !b.shadows.dirty {
			b.shadows.mu.Unlock()
			continue
		}
		snap := map[string][]byte{}
		for k, v := range b.shadows.tally {
			snap[k+"."+b.shadows.id], _ = json.Marshal(v)
		}
		b.shadows.dirty = false
		b.shadows.mu.Unlock()
		for k, v := range snap {
			if _, err := b.store.Shadow.Put(ctx, k, v); err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("publish shadow tallies", "err", err)
			}
		}
	}
}
