package broker

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Interleaving experiments (docs/relevance.md, "Interleaving"): a ranker
// step whose canary interleaves gives the queries the canary takes a
// team-draft interleaving of the live and the candidate rankings, and
// records which side placed each result shown, under the search's query
// id, for the registry to credit users' clicks to.

// interleaving marks a ranker step whose canary is an interleaving
// experiment: the two versions' digests.
type interleaving struct {
	live, candidate string
}

// maxInterleavedShown caps the results whose side is recorded.
const maxInterleavedShown = 100

// queryIDKey carries a search's query id in its context.
type queryIDKey struct{}

// withQueryID returns ctx carrying a search's query id.
func withQueryID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, queryIDKey{}, id)
}

// queryID is the query id ctx carries, or "".
func queryID(ctx context.Context) string {
	id, _ := ctx.Value(queryIDKey{}).(string)
	return id
}

// rankCall runs ranker s (step's live version or its canary) on in, the
// input for s made of the candidates head; when s is the canary of an
// interleaving step, both versions run, each with the fields it reads,
// and the answer is their team-draft interleaving.
func (r *run) rankCall(ctx context.Context, step, s *Step, canary bool, in *abi.RankRequest, head []api.Hit) (*abi.RankResponse, error) {
	if !canary || step.interleave == nil {
		return s.Plugin.Rank(ctx, in)
	}
	liveIn := in
	if !slices.Equal(step.Fields, s.Fields) {
		liveIn = plugins.RankInput(r.req.Q, r.req.Context, head, step.Fields)
	}
	return r.b.interleave(ctx, r.plan.Index, step, s, liveIn, in, r.plan.From+r.plan.Size)
}

// interleave ranks the same candidates with the live version (step, on
// liveIn) and the candidate (cand, on candIn), interleaves the two by
// team-draft and records which side placed each of the first shown
// results. A failure of either version is the step's failure. Each result
// keeps the score the side that placed it gave it, so an interleaved
// page's scores need not decrease.
func (b *Broker) interleave(ctx context.Context, index string, step, cand *Step, liveIn, candIn *abi.RankRequest, shown int) (*abi.RankResponse, error) {
	candOut, err := cand.Plugin.Rank(ctx, candIn)
	if err != nil {
		return nil, err
	}
	liveOut, err := step.Plugin.Rank(ctx, liveIn)
	if err != nil {
		return nil, err
	}
	indexes := func(out *abi.RankResponse) ([]int, map[int]float64) {
		idx, score := make([]int, len(out.Ranked)), make(map[int]float64, len(out.Ranked))
		for i, e := range out.Ranked {
			idx[i], score[int(e.Index)] = int(e.Index), e.Score
		}
		return idx, score
	}
	liveIdx, liveScore := indexes(liveOut)
	candIdx, candScore := indexes(candOut)
	qid := queryID(ctx)
	seed := rand.Uint64()
	if qid != "" {
		h := fnv.New64a()
		h.Write([]byte(qid))
		seed = h.Sum64()
	}
	order, teams := relevance.TeamDraft(liveIdx, candIdx, seed)
	out := &abi.RankResponse{Ranked: make([]abi.Ranked, len(order))}
	rec := &api.InterleavedQuery{Plugin: step.Plugin.Spec().Name, Live: step.interleave.live, Candidate: step.interleave.candidate,
		Teams: make(map[string]uint8, min(len(order), shown, maxInterleavedShown))}
	for p, c := range order {
		score := liveScore[c]
		if teams[p] == relevance.TeamCandidate {
			score = candScore[c]
		}
		out.Ranked[p] = abi.Ranked{Index: uint32(c), Score: score}
		if p < shown && p < maxInterleavedShown {
			rec.Teams[candIn.Candidates[c].ID] = uint8(teams[p])
		}
	}
	if qid != "" {
		b.cp.emit(cpWrite{kind: cpInterleaved, index: index, plugin: rec.Plugin, qid: qid, rec: rec})
	}
	return out, nil
}

// recordInterleaved stores an interleaved search's sides; the
// control-plane writer calls it, off the query path. A failure is logged
// (that search's clicks then count for neither side).
func (b *Broker) recordInterleaved(ctx context.Context, index, qid string, rec *api.InterleavedQuery) {
	raw, err := json.Marshal(rec)
	if err == nil {
		_, err = b.store.Interleave.Put(ctx, index+"."+qid, raw)
	}
	if err != nil {
		b.cfg.Logger.Warn("record an interleaved search", "index", index, "query_id", qid, "err", err)
	}
}
