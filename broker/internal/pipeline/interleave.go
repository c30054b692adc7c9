package pipeline

import (
	"context"
	"hash/fnv"
	"math/rand/v2"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Interleaving experiments (docs/relevance.md, "Interleaving"): a ranker
// step whose canary interleaves gives the queries the canary takes a
// team-draft interleaving of the live and the candidate rankings, and
// records which side placed each result shown, under the search's query
// id, for the registry to credit users' clicks to.

// Interleaving marks a ranker step whose canary is an interleaving
// experiment: the two versions' digests.
type Interleaving struct {
	Live, Candidate string
}

// MaxInterleavedShown caps the results whose side is recorded.
const MaxInterleavedShown = 100

// Interleave ranks the same candidates with the live version (step, on
// liveIn) and the candidate (cand, on candIn), interleaves the two by
// team-draft (seeded by the query id qid, random without one) and
// returns the interleaving and which side placed each of the first
// shown results (at most MaxInterleavedShown), by document id. A failure
// of either version is the step's failure. Each result keeps the score
// the side that placed it gave it, so an interleaved page's scores need
// not decrease.
func Interleave(ctx context.Context, step, cand *Step, liveIn, candIn *abi.RankRequest, shown int, qid string) (*abi.RankResponse, *api.InterleavedQuery, error) {
	candOut, err := cand.Plugin.Rank(ctx, candIn)
	if err != nil {
		return nil, nil, err
	}
	liveOut, err := step.Plugin.Rank(ctx, liveIn)
	if err != nil {
		return nil, nil, err
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
	seed := rand.Uint64()
	if qid != "" {
		h := fnv.New64a()
		h.Write([]byte(qid))
		seed = h.Sum64()
	}
	order, teams := relevance.TeamDraft(liveIdx, candIdx, seed)
	out := &abi.RankResponse{Ranked: make([]abi.Ranked, len(order))}
	rec := &api.InterleavedQuery{Plugin: step.Plugin.Spec().Name, Live: step.Interleave.Live, Candidate: step.Interleave.Candidate,
		Teams: make(map[string]uint8, min(len(order), shown, MaxInterleavedShown))}
	for p, c := range order {
		score := liveScore[c]
		if teams[p] == relevance.TeamCandidate {
			score = candScore[c]
		}
		out.Ranked[p] = abi.Ranked{Index: uint32(c), Score: score}
		if p < shown && p < MaxInterleavedShown {
			rec.Teams[candIn.Candidates[c].ID] = uint8(teams[p])
		}
	}
	return out, rec, nil
}
