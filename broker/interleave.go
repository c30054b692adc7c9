package broker

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Interleaving experiments (docs/relevance.md, "Interleaving"): a ranker
// step whose canary interleaves gives the queries the canary takes a
// team-draft interleaving of the live and the candidate rankings
// (pipeline.Interleave), and records which side placed each result
// shown, under the search's query id, for the registry to credit users'
// clicks to.

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
	if !canary || step.Interleave == nil {
		return s.Plugin.Rank(ctx, in)
	}
	liveIn := in
	if !slices.Equal(step.Fields, s.Fields) {
		liveIn = plugins.RankInput(r.req.Q, r.req.Context, head, step.Fields)
	}
	return r.b.interleave(ctx, r.plan.Index, step, s, liveIn, in, r.plan.From+r.plan.Size)
}

// interleave ranks the same candidates with the live version (step, on
// liveIn) and the candidate (cand, on candIn), interleaves the two
// (pipeline.Interleave) and, when ctx carries a query id, hands which
// side placed each of the first shown results to the control-plane
// writer. A failure of either version is the step's failure.
func (b *Broker) interleave(ctx context.Context, index string, step, cand *Step, liveIn, candIn *abi.RankRequest, shown int) (*abi.RankResponse, error) {
	qid := queryID(ctx)
	out, rec, err := pipeline.Interleave(ctx, step, cand, liveIn, candIn, shown, qid)
	if err != nil {
		return nil, err
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
