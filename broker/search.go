package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// Search runs one request against an index: the index's rewriters, the
// plan, the query's term statistics (cached per generation), the fan-out to
// every shard, the merge, the rankers, the page.
func (b *Broker) Search(ctx context.Context, index string, req *api.SearchRequest) (*api.SearchResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	name := index
	index = b.resolve(index)
	resp, _, _, err := b.search(ctx, index, req)
	if err != nil {
		return nil, err
	}
	if index != name {
		resp.Index = index
	}
	for i := range resp.Hits { // as a decoded response has them
		resp.Hits[i].DecodeFields()
	}
	return resp, nil
}

// search is Search of a request already validated (DecodeRequest,
// Search); it returns the response and the run's stage times (the
// slow-query log's). The planner checks the request again after the
// rewriters, who may have changed it.
func (b *Broker) search(ctx context.Context, index string, req *api.SearchRequest) (resp *api.SearchResponse, times stageTimes, cost time.Duration, err error) {
	start := time.Now()
	def, ok := b.Index(index)
	if !ok {
		def, ok = lookedUp(ctx)
	}
	if !ok {
		if err := subject.ValidIndexName(index); err != nil {
			return nil, stageTimes{}, 0, api.BadRequest("%v", err)
		}
		var err error
		if def, err = b.lookupIndex(ctx, index); err != nil {
			return nil, stageTimes{}, 0, err
		}
		index = def.Name // an alias's, read with it
	}
	if err := b.checkExplain(req); err != nil {
		return nil, stageTimes{}, 0, err // before the rewriters: it costs nothing
	}
	pl, rev := b.pipelines.Current(index)
	opts := execOptions{profile: req.Profile, start: start, pipeline: pl, metrics: b.metrics.index(index)}
	if req.Variant != nil {
		rev = 0 // not the live pipeline
		pl, err := b.variant(ctx, index, opts.pipeline, req.Variant)
		if err != nil {
			return nil, stageTimes{}, 0, err
		}
		// A replay's clock (its deadline and took_ms) starts once its
		// candidate pipeline is loaded: a version's first load compiles
		// it, a cost of the candidate's (bounded by the compile limits),
		// not of the search.
		opts.pipeline, opts.start = pl, time.Now()
	}
	r := &run{b: b, def: def, execOptions: opts, req: *req, mirroring: req.Variant == nil} // replays are not mirrored
	var rewriters []Step
	if opts.pipeline != nil {
		rewriters = opts.pipeline.Rewriters
	}
	resp, err = r.fromRewrite(ctx, index, rewriters)
	if resp != nil {
		resp.PipelineRevision = rev
	}
	if len(r.mirrors) > 0 {
		b.mirrorRewrites(index, def, opts.pipeline, r.mirrors, resp)
	}
	return resp, r.times, r.cost, err
}

// timeUp reports whether ctx's deadline has passed: by the clock, not
// only once ctx says so. A plugin call stops at the deadline by the clock
// (the host's time limit reads it), and ctx's timer may fire a moment
// later: a rewriter stopped by the request's deadline must not be taken
// for one that failed with time to spare.
func timeUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// fromRewrite runs the run from its rewriters on: each of rewriters,
// the plan (the planner checks the request again: the rewriters may have
// changed it), and its execution.
func (r *run) fromRewrite(ctx context.Context, index string, rewriters []Step) (*api.SearchResponse, error) {
	// The request's deadline holds from its start: a rewriter's call
	// stops there whatever its budget.
	ctx, cancel := context.WithDeadline(ctx, r.start.Add(r.b.planner.Timeout(&r.req)))
	defer cancel()
	if len(rewriters) > 0 {
		if r.hints == nil {
			r.hints = &planner.Hints{}
		}
		if err := r.rewrite(ctx, index, rewriters); err != nil {
			return nil, err
		}
		r.rewritten = time.Now()
		if timeUp(ctx) {
			return nil, api.Errorf(api.CodeTimeout, "the request's time (%s) ran out in its rewriters: %s", r.b.planner.Timeout(&r.req), r.stepErrors())
		}
	}
	if err := r.b.checkExplain(&r.req); err != nil {
		return nil, err // the rewriters asked for it
	}
	hints := r.hints
	if r.pipeline != nil {
		if rk := r.pipeline.Ranking(); rk != nil {
			var h planner.Hints
			if hints != nil {
				h = *hints // the rewriters' own stay as they are
			}
			h.Ranking = rk
			hints = &h
		}
	}
	if cands := planner.TypoCandidates(&r.req, r.def.Query); cands != nil && (hints == nil || len(hints.Query) == 0) {
		typed, words, err := r.unknownWords(ctx, hints, cands)
		if err != nil {
			return nil, err
		}
		if words == nil {
			return r.execute(ctx, typed) // the index holds every word: q as typed
		}
		var h planner.Hints
		if hints != nil {
			h = *hints
		}
		h.TypoWords = words
		hints = &h
	}
	plan, err := r.b.planner.Plan(&r.req, r.def, hints)
	if err != nil {
		return nil, err
	}
	return r.execute(ctx, plan)
}

// unknownWords: under typo tolerance "auto", which of cands (by field,
// the words of q that may take typos) no field holds as typed,
// read from the statistics of q as typed: the cache's, put together from
// its terms', or one round trip to every shard, whose statistics the
// search then finds cached when no word takes typos (its query is q as
// typed; on an index of one shard the round trip is one more: its shard
// would count them as it searched). Without them (a shard did not answer
// in time) no word takes typos.
//
// It returns the plan of q as typed too: the search's, when no word takes
// typos.
func (r *run) unknownWords(ctx context.Context, hints *planner.Hints, cands map[string][]string) (*planner.Plan, map[string][]string, error) {
	typed := r.req
	typed.Typos = new(false)
	plan, err := r.b.planner.Plan(&typed, r.def, hints)
	if err != nil {
		return nil, nil, err
	}
	st := r.b.stats.Get(plan.Index, plan.Query)
	if st == nil {
		st = r.composedStats(ctx, plan)
	}
	if st == nil {
		statsCtx, cancel := context.WithTimeout(ctx, plan.ShardTimeout/4)
		st, err = r.b.fan.CountStats(statsCtx, plan)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		r.typedStatsRoundTrip = true
		r.typedStatsIncomplete = st == nil
	}
	m := r.b.mappings.get(&r.def)
	if st == nil || m == nil {
		return plan, nil, nil
	}
	return plan, planner.UnknownWords(cands, st.DocFreq, m), nil
}

// execOptions are what a run is made with, and what it gathers before its
// plan: the rewriters' profile stages and step reports.
type execOptions struct {
	profile  bool
	start    time.Time
	pipeline *Pipeline
	prelude  []api.Stage // rewriter stages
	reports  []api.StepReport
	// metrics, when set, gets the request's stage times; rewritten is
	// when the rewriters ended (zero: there were none).
	metrics   *indexMetrics
	rewritten time.Time
	// times are the stage times too (search returns them: the
	// slow-query log).
	times stageTimes
	// cost is the search's own work: its shards' search time on the
	// searchers and its plugin calls' time. Its team is classed heavy by
	// it (Config.HeavyAfter), and charged by it (Config.RateUnit), not by
	// its latency, which other teams' load stretches.
	cost time.Duration
}

// stageTimes are one request's stage times, for the slow-query log.
type stageTimes [numStages]time.Duration

// stage records a stage's time in the metrics and in times.
func (o *execOptions) stage(st int, d time.Duration) {
	o.metrics.stage(st, d)
	o.times[st] += d
}

// execute runs a plan: each stage is a method of the run that times
// itself where it runs.
func (r *run) execute(ctx context.Context, plan *planner.Plan) (*api.SearchResponse, error) {
	// ctx holds the request's deadline already (fromRewrite: from its
	// start, the rewriters within it); the shards' is a merge reserve
	// before it.
	deadline := r.start.Add(plan.Timeout)
	shardCtx, cancelShards := context.WithDeadline(ctx, deadline.Add(plan.ShardTimeout-plan.Timeout))
	defer cancelShards()
	r.plan = plan
	if err := r.pointInTime(shardCtx); err != nil {
		return nil, err
	}
	r.planned()
	// The team's search memory: an estimate before the shards are asked,
	// what their replies came to once decoded, given back once the
	// response is cut (shadow runs hold theirs too).
	defer r.releaseMemory()
	if err := r.account(r.estimate(), "estimated from its shards, hits, fields and explain"); err != nil {
		return nil, err
	}
	if err := r.statistics(shardCtx); err != nil {
		return nil, err
	}
	r.fanOut(shardCtx)
	if err := r.collect(ctx); err != nil {
		return nil, err
	}
	if err := r.account(r.counted(), "counted from its shards' replies"); err != nil {
		return nil, err
	}
	r.merge()
	if err := r.deepen(ctx, shardCtx); err != nil {
		return nil, err
	}
	if len(r.deepened) > 0 {
		if err := r.account(r.counted(), "counted from its shards' replies, a second round's included"); err != nil {
			return nil, err
		}
	}
	r.takeExplanations()
	if err := r.rank(ctx); err != nil {
		return nil, err
	}
	if err := r.page(); err != nil {
		return nil, err
	}
	r.finish()
	if r.plan.PIT != nil {
		if r.req.PIT.Close {
			r.b.fan.ClosePIT(shardCtx, r.plan)
		} else {
			r.resp.PIT = encodePIT(r.plan.Index, r.plan.PIT)
		}
	}
	return r.resp, nil
}

// run is one search from its request to its response: the request as
// the rewriters change it, the plan, and each stage's state and time.
type run struct {
	b   *Broker
	def api.IndexDefinition
	execOptions

	// rewrite: the request as the rewriters leave it and the hints they
	// give the planner; with mirroring, the live rewriter calls whose
	// shadows this query samples.
	req       api.SearchRequest
	hints     *planner.Hints
	mirroring bool
	mirrors   []rewriteMirror

	plan *planner.Plan

	// planned: the plan is made; prof holds the stages from the plan on.
	plannedAt time.Time
	prof      []api.Stage
	// statistics and fan-out
	sreq        *wire.ShardRequest
	statsDetail string
	// typedStatsRoundTrip: unknownWords asked every shard for the
	// statistics of q as typed (the statistics stage then says so);
	// typedStatsIncomplete: a shard did not answer in time, so the search
	// (of q as typed) does not ask again.
	typedStatsRoundTrip, typedStatsIncomplete bool
	results                                   []fanout.Result
	answered                                  *wire.ShardRequest // sreq, or its retry with fresh statistics
	refreshed                                 bool
	deepened                                  []int // the shards asked again for all K, by position
	fanStart, fanned                          time.Time
	// collect, merge, rank, page (mergeTook: collect, merge and page)
	resp       *api.SearchResponse
	good       []*wire.ShardResponse
	hits       []api.Hit // every candidate, in order, before the page
	mergeTook  time.Duration
	rankStages []api.Stage
	rankTook   time.Duration
	// explanations are the candidates' score explanations, by id, when
	// the request asked to explain, as decoded: those of the page are
	// encoded.
	explanations map[string]any
	// memTeam is the team whose search memory the run holds memHeld
	// bytes of (account); replyBytes is what its shards' decoded replies
	// hold (collect).
	memTeam    *admission.Team
	memHeld    int64
	replyBytes int64
}

// planned records the rewrite and plan stages.
func (r *run) planned() {
	r.plannedAt = time.Now()
	if r.rewritten.IsZero() {
		r.stage(stagePlan, r.plannedAt.Sub(r.start))
	} else {
		r.stage(stageRewrite, r.rewritten.Sub(r.start))
		r.stage(stagePlan, r.plannedAt.Sub(r.rewritten))
	}
	if r.profile {
		r.prof = append(r.prof, api.Stage{Name: "plan", TookMS: ms(r.plannedAt.Sub(r.start)), Detail: planDetail(r.plan)})
	}
	r.sreq = &wire.ShardRequest{Query: r.plan.Query, K: r.plan.ShardK, Sort: r.plan.Sort, Fields: r.plan.Fields, Facets: fanout.ShardFacets(r.plan), MaxTerms: r.plan.MaxTerms, Explain: r.req.Explain, Highlight: r.req.Highlight,
		Suggest: fanout.ShardSuggest(r.plan)}
	for _, v := range r.plan.SearchAfter {
		r.sreq.SearchAfter = append(r.sreq.SearchAfter, []byte(v))
	}
	if pit := r.plan.PIT; pit != nil {
		r.sreq.PIT, r.sreq.PITKeepAliveMS = pit.ID, pit.KeepAlive.Milliseconds()
	}
}

// statistics gives the shard request the query's global term statistics
// (exact scoring): the query's own from the cache, or put together from
// the cached statistics of its terms, or from one round trip to every
// shard.
func (r *run) statistics(shardCtx context.Context) error {
	if !r.plan.ExactScoring || r.b.cfg.NoExactScoring {
		return nil
	}
	// A point in time's statistics are its own, counted every time:
	// the cache holds the index's now.
	pit := r.plan.PIT != nil
	var st *wire.GlobalStats
	if !pit {
		st = r.b.stats.Get(r.plan.Index, r.plan.Query)
	}
	source := statsQueryCache
	switch {
	case st != nil:
	case len(r.plan.Shards) == 1:
		// One shard holds the whole index: it counts the statistics
		// itself, without a round trip, and sends them back for the
		// cache (collect).
		r.sreq.LocalStats = true
		took := time.Since(r.plannedAt)
		r.stage(stageStats, took)
		r.metrics.statistics(statsOneShard)
		if r.profile {
			r.prof = append(r.prof, api.Stage{Name: "stats", TookMS: ms(took), Detail: "counted by the index's one shard as it searches: no round trip"})
		}
		return nil
	case !pit && r.typedStatsIncomplete:
		// Asked just before the plan, and a shard did not answer in time:
		// shards score with their own, as after an incomplete round trip.
		source = statsRoundTrip
	case !pit && r.composeStats(shardCtx):
		st, source = r.sreq.Stats, statsTerms
	default:
		// The statistics phase gets a quarter of the shards' time: a
		// shard that does not answer it must not starve the search
		// itself.
		source = statsRoundTrip
		statsCtx, cancel := context.WithTimeout(shardCtx, r.plan.ShardTimeout/4)
		var err error
		st, err = r.b.fan.CountStats(statsCtx, r.plan)
		cancel()
		if err != nil {
			return err
		}
	}
	r.sreq.Stats = st
	if st != nil && !pit {
		r.sreq.MaxStaleUpdates = r.b.stats.StaleUpdates()
	}
	typedFirst := source == statsQueryCache && r.typedStatsRoundTrip
	if typedFirst {
		// unknownWords asked every shard for them just before the plan
		// (typo tolerance "auto"): a round trip, not a hit.
		source = statsRoundTrip
	}
	took := time.Since(r.plannedAt)
	r.stage(stageStats, took)
	r.metrics.statistics(source)
	if r.profile {
		detail := "cache miss: one round trip to every shard"
		switch {
		case typedFirst:
			detail = "cache miss: one round trip to every shard, before the plan (which of q's words the index holds: typo tolerance)"
		case source == statsQueryCache:
			detail = "cache hit"
		case source == statsTerms:
			detail = "put together from the cached statistics of its terms: no round trip"
		case st == nil:
			detail = "incomplete (a shard did not answer in time): shards scored with their own statistics"
		}
		r.prof = append(r.prof, api.Stage{Name: "stats", TookMS: ms(took), Detail: detail})
	}
	return nil
}

// composeStats gives the shard request statistics put together from the
// cache of terms (composedStats), and reports whether it did.
func (r *run) composeStats(ctx context.Context) bool {
	st := r.composedStats(ctx, r.plan)
	if st == nil {
		return false
	}
	r.sreq.Stats, r.sreq.StatsComposed = st, true
	return true
}

// composedStats are plan's statistics put together from the cache of
// terms, when the query's terms can be listed from the index's mapping
// and every one is cached; nil otherwise.
func (r *run) composedStats(ctx context.Context, plan *planner.Plan) *wire.GlobalStats {
	if !r.b.stats.HasTerms(plan.Index) {
		return nil // no table to put them together from: no listing
	}
	m := r.b.mappings.get(&r.def)
	if m == nil {
		return nil
	}
	qt, ok := querystats.ListTerms(ctx, &wire.ShardRequest{Query: plan.Query, MaxTerms: plan.MaxTerms}, m, r.b.stats.Dictionaries(plan.Index))
	if !ok {
		return nil
	}
	r.b.wantDictionaries(plan, qt.Terms)
	return r.b.stats.Compose(plan.Index, qt.Terms, qt.Fields, qt.Dictionaries)
}

// fanOut asks every shard, again with fresh statistics if one found them
// stale.
func (r *run) fanOut(shardCtx context.Context) {
	r.fanStart = time.Now()
	r.results, r.answered = r.b.fan.Search(shardCtx, r.plan, r.sreq)
	r.refreshed = r.answered != r.sreq
	r.fanned = time.Now()
	r.stage(stageFanOut, r.fanned.Sub(r.fanStart))
}

// collect decodes the shards' answers, and fails the search when a shard
// failed and the request does not take partial results (or every shard
// failed, or one refused the request itself).
func (r *run) collect(ctx context.Context) error {
	start := time.Now()
	defer func() { r.mergeTook += time.Since(start) }() // decoding is the merge's
	plan := r.plan
	r.resp = &api.SearchResponse{Shards: api.ShardsInfo{Total: len(plan.Shards)}}
	r.good = make([]*wire.ShardResponse, 0, len(r.results))
	for i, res := range r.results {
		sr, err := r.decode(res)
		if err != nil {
			r.shardFailed(ctx, i, err)
			continue
		}
		r.resp.Shards.Successful++
		r.results[i].Resp = sr
		r.good = append(r.good, sr)
		if sr.Stats != nil && r.sreq.LocalStats && plan.PIT == nil {
			r.b.stats.NoteGeneration(plan.Index, sr.Stats.Generation)
			r.b.stats.Put(plan.Index, plan.Query, sr.Stats)
		}
	}
	return r.failed()
}

// decode decodes a shard's reply, counting its hits' memory and its
// search time.
func (r *run) decode(res fanout.Result) (*wire.ShardResponse, error) {
	if res.Err != nil {
		return nil, res.Err
	}
	var sr wire.ShardResponse
	if err := wire.DecodeShardResponse(res.Reply, &sr); err != nil {
		return nil, err
	}
	for j := range sr.Hits {
		r.replyBytes += hitBytes(&sr.Hits[j])
	}
	r.cost += time.Duration(sr.TookNS)
	r.b.stats.NoteGeneration(r.plan.Index, sr.Generation)
	return &sr, nil
}

// shardFailed records that the shard at position i of the plan failed.
func (r *run) shardFailed(ctx context.Context, i int, err error) {
	shard := r.plan.Shards[i]
	r.results[i].Err = r.b.shardError(ctx, r.plan, shard, err)
	r.resp.Shards.Failed++
	r.resp.Shards.Failures = append(r.resp.Shards.Failures, api.ShardFailure{Shard: shard, Reason: r.results[i].Err.Error()})
}

// failed fails the search when a shard failed and the request does not
// take partial results (or every shard failed, or one refused the
// request itself).
func (r *run) failed() error {
	if r.resp.Shards.Failed > 0 && (!r.plan.AllowPartial || r.resp.Shards.Successful == 0 || anyClientError(r.results)) {
		return shardsFailed(r.resp.Shards, r.results)
	}
	return nil
}

// deepen asks again, for all K hits, each shard whose first round may
// have left out some of the merged top K (fanout.Deeper: rare on hash
// sharding, Plan.ShardK), merges once more, and cuts the candidates to
// K: those past it are not all known. A shard that fails its second
// round counts as failed, its first round's hits and counts dropped.
func (r *run) deepen(ctx, shardCtx context.Context) error {
	if r.deepened = fanout.Deeper(r.results, r.hits, r.plan); len(r.deepened) > 0 {
		start := time.Now()
		more := r.b.fan.Deepen(shardCtx, r.plan, r.answered, r.deepened)
		r.stage(stageFanOut, time.Since(start))
		r.metrics.deepened(len(r.deepened))
		for j, res := range more {
			i := r.deepened[j]
			sr, err := r.decode(res)
			if err != nil {
				r.resp.Shards.Successful--
				r.results[i].Resp = nil
				r.shardFailed(ctx, i, fmt.Errorf("asked again for %d hits: %w", r.plan.K, err))
				continue
			}
			r.results[i].Resp.Hits = sr.Hits // the first round's totals and facets stay
		}
		if err := r.failed(); err != nil {
			return err
		}
		r.good = r.good[:0]
		for _, res := range r.results {
			if res.Resp != nil {
				r.good = append(r.good, res.Resp)
			}
		}
		r.merge()
		if r.profile {
			r.prof = append(r.prof, api.Stage{Name: "deepen", TookMS: ms(time.Since(start)),
				Detail: fmt.Sprintf("shards %v asked again for k=%d: their last of k=%d hits ranked in the merged top %d", r.deepenedShards(), r.plan.K, r.plan.ShardK, r.plan.K)})
		}
	}
	if len(r.hits) > r.plan.K {
		r.hits = r.hits[:r.plan.K]
	}
	return nil
}

// deepenedShards are the shards deepen asked again.
func (r *run) deepenedShards() []int {
	out := make([]int, len(r.deepened))
	for j, i := range r.deepened {
		out[j] = r.plan.Shards[i]
	}
	return out
}

// merge puts every shard's candidates in one order and sums totals and
// facets.
func (r *run) merge() {
	start := time.Now()
	m := fanout.Merge(r.good, r.plan)
	r.resp.Total, r.resp.Facets, r.hits = m.Total, m.Facets, m.Hits
	if f, ok := r.resp.Facets[wire.SuggestFacet]; ok {
		r.resp.Suggestions = f.Terms
		delete(r.resp.Facets, wire.SuggestFacet)
		if len(r.resp.Facets) == 0 {
			r.resp.Facets = nil
		}
	}
	r.mergeTook += time.Since(start)
}

// takeExplanations moves each candidate's score explanation and
// highlighted fragments out of its fields (wire.ExplanationField,
// wire.HighlightField), before a ranker sees them; page encodes the
// explanations of its hits, and the fragments stay with their hit.
func (r *run) takeExplanations() {
	if !r.sreq.Explain && r.sreq.Highlight == nil {
		return
	}
	start := time.Now()
	defer func() { r.mergeTook += time.Since(start) }()
	r.explanations = make(map[string]any, len(r.hits))
	for i := range r.hits {
		h := &r.hits[i]
		h.DecodeFields()
		if e, ok := h.Fields[wire.ExplanationField]; ok {
			delete(h.Fields, wire.ExplanationField)
			r.explanations[h.ID] = e
		}
		if hl, ok := h.Fields[wire.HighlightField].(map[string]any); ok {
			delete(h.Fields, wire.HighlightField)
			h.Highlight = make(map[string][]string, len(hl))
			for field, frags := range hl {
				list, _ := frags.([]any)
				for _, f := range list {
					if s, ok := f.(string); ok {
						h.Highlight[field] = append(h.Highlight[field], s)
					}
				}
			}
		}
	}
}

// page cuts the from/size window, decodes its sort values, takes the
// rankers' extra fields out of it and gives its hits their explanations,
// counting the response's bytes as it goes: past responseCap it stops
// with response_too_large, before anything is encoded.
func (r *run) page() error {
	start := time.Now()
	defer func() { r.mergeTook += time.Since(start) }()
	r.resp.Hits = fanout.Page(r.hits, r.plan)
	if r.plan.SortShown > 0 {
		decodeSortValues(r.b.sortTypesOf(r.plan.Index), r.plan.Sort[:r.plan.SortShown], r.resp.Hits)
	}
	if n := len(r.resp.Hits); n > 0 && n == r.plan.Size && len(r.plan.Sort) > 0 && !r.plan.Ranking {
		r.resp.Next = cursorOf(&r.resp.Hits[n-1], r.plan.Sort)
	}
	if len(r.plan.ExtraFields) > 0 {
		for i := range r.resp.Hits {
			r.resp.Hits[i].DecodeFields()
			for _, f := range r.plan.ExtraFields {
				delete(r.resp.Hits[i].Fields, f)
			}
		}
	}
	budget := responseBudget{max: r.b.responseCap()}
	budget.take(facetBytes(r.resp.Facets))
	if r.profile {
		budget.take(profileBytes(r.prelude) + profileBytes(r.prof) + 160*len(r.results))
	}
	for i := range r.resp.Hits {
		h := &r.resp.Hits[i]
		if e, ok := r.explanations[h.ID]; ok {
			raw, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encode hit %q's explanation: %w", h.ID, err)
			}
			h.Explanation = raw
		}
		if !budget.take(int(hitBytes(h)) - hitMemory + 48 + len(h.Explanation) + highlightBytes(h.Highlight)) {
			return r.responseTooLarge(i+1, len(r.resp.Hits), budget.max)
		}
	}
	r.resp.Pipeline = r.reports
	return nil
}

// cursorOf is the cursor of a hit of a search sorted by sort: its sort
// values as bleve's search_after reads them (a score as its number).
func cursorOf(h *api.Hit, sort []string) string {
	values := make([]string, len(sort))
	for i, s := range sort {
		switch {
		case fanout.SortField(s) == "_score":
			values[i] = strconv.FormatFloat(h.Score, 'g', -1, 64)
		case i < len(h.SortKeys):
			values[i] = h.SortKeys[i]
		}
	}
	return planner.EncodeCursor(values)
}

// highlightBytes estimates a hit's fragments as the response writes them.
func highlightBytes(hl map[string][]string) int {
	n := 0
	for field, frags := range hl {
		n += len(field) + 8
		for _, f := range frags {
			n += len(f) + 4
		}
	}
	return n
}

// finish records the merge and rank times and writes the profile.
func (r *run) finish() {
	done := time.Now()
	r.resp.TookMS = ms(done.Sub(r.start))
	r.stage(stageMerge, r.mergeTook)
	if r.plan.Ranking {
		r.stage(stageRank, r.rankTook)
	}
	if !r.profile {
		return
	}
	plan := r.plan
	prof := append(r.prelude, r.prof...)
	prof = append(prof, api.Stage{Name: "fan-out", TookMS: ms(r.fanned.Sub(r.fanStart)),
		Detail: fmt.Sprintf("%d shards, k=%d each, shard deadline %s", len(plan.Shards), plan.ShardK, plan.ShardTimeout)})
	if r.refreshed {
		prof[len(prof)-1].Detail += "; statistics refreshed (a shard had more updates since they were counted than the bound) and every shard asked again"
	}
	for i, res := range r.results {
		st := api.Stage{Name: "shard " + strconv.Itoa(plan.Shards[i]), TookMS: ms(res.Took)}
		switch {
		case res.Resp != nil:
			search, queue := time.Duration(res.Resp.TookNS), time.Duration(res.Resp.QueueNS)
			st.Detail = fmt.Sprintf("search %.3fms, queue %.3fms, transport %.3fms, replica %s, generation %d, seq %d",
				ms(search), ms(queue), ms(res.Took-search-queue), res.Resp.Replica, res.Resp.Generation, res.Resp.Seq)
		case res.Err != nil:
			st.Detail = "failed: " + res.Err.Error()
		}
		if res.Hedged {
			st.Detail += fmt.Sprintf(" (hedged, hedge won: %v)", res.HedgeWon)
		}
		prof = append(prof, st)
	}
	prof = append(prof, api.Stage{Name: "merge", TookMS: ms(r.mergeTook)})
	prof = append(prof, r.rankStages...)
	r.resp.Profile = &api.Profile{Stages: prof}
}

func planDetail(p *planner.Plan) string {
	return fmt.Sprintf("query %s; k=%d (each shard %d first); timeout %s (shards %s); hedge %v; allow_partial %v; exact_scoring %v",
		p.Query, p.K, p.ShardK, p.Timeout, p.ShardTimeout, p.Hedge.Enabled, p.AllowPartial, p.ExactScoring)
}

// shardError is a shard's failure as the caller sees it: an internal one
// (a shard's code internal, or a reply that does not decode: a library's
// words, a Go error) is logged with the request id and shown as
// "internal error on shard N (request id …)"; the others say what
// happened (timeout, unavailable, the request's own fault).
func (b *Broker) shardError(ctx context.Context, plan *planner.Plan, shard int, err error) error {
	if api.CodeOf(err) != api.CodeInternal {
		return err
	}
	trace.Logger(ctx, b.cfg.Logger).Error("internal error on a shard", "index", plan.Index, "shard", shard, "err", err)
	return api.Errorf(api.CodeInternal, "internal error on shard %d (request id %s)", shard, requestid.From(ctx))
}

// shardOverloadedRetryMS is the retry-after of a search whose every
// failed shard was refused by a searcher's full queue.
const shardOverloadedRetryMS = 100

// shardsFailed turns shard failures into the request's error: the
// caller's own (a bad or too complex request) if a shard said so, in that
// shard's words; else internal (500) if a shard failed on an internal
// error (its detail logged by shardError); else overloaded (429) if every
// failed shard was refused by a full queue; else timeout or unavailable.
func shardsFailed(info api.ShardsInfo, results []fanout.Result) error {
	for _, r := range results {
		if fanout.IsClientError(r.Err) {
			return r.Err
		}
	}
	f := info.Failures[0]
	code := api.CodeUnavailable
	for _, r := range results {
		if errors.Is(r.Err, api.ErrTimeout) {
			code = api.CodeTimeout
		}
	}
	overloaded := true
	for _, r := range results {
		if r.Err != nil && api.CodeOf(r.Err) == api.CodeInternal {
			return api.Errorf(api.CodeInternal, "%v; %d of %d shards failed", r.Err, info.Failed, info.Total)
		}
		overloaded = overloaded && (r.Err == nil || api.CodeOf(r.Err) == api.CodeOverloaded)
	}
	msg := fmt.Sprintf("%d of %d shards failed; shard %d: %s", info.Failed, info.Total, f.Shard, f.Reason)
	if overloaded {
		// Every failure was a searcher's full queue: a client should
		// back off and try again, as from a broker's own refusal.
		return &api.Error{Code: api.CodeOverloaded, Message: msg, RetryAfterMS: shardOverloadedRetryMS}
	}
	return api.Errorf(code, "%s", msg)
}

// anyClientError reports whether a shard refused the request itself.
func anyClientError(results []fanout.Result) bool {
	for _, r := range results {
		if fanout.IsClientError(r.Err) {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// stepErrors lists the failed steps of the run's reports, for an error
// message.
func (r *run) stepErrors() string {
	var parts []string
	for _, rep := range r.reports {
		if rep.Error != "" {
			parts = append(parts, rep.Plugin+": "+rep.Error)
		}
	}
	if len(parts) == 0 {
		return "no step failed"
	}
	return strings.Join(parts, "; ")
}
