package relevance

import (
	"context"
	"fmt"
	"slices"

	"github.com/quarrysearch/quarry/api"
)

// DefaultK is the depth of an evaluation that gives none.
const DefaultK = 10

// DefaultConfidence is the confidence of intervals and gates that give
// none.
const DefaultConfidence = 0.95

// SearchFunc runs one search: the live pipeline's, or a candidate's.
type SearchFunc func(ctx context.Context, req *api.SearchRequest) (*api.SearchResponse, error)

// Options tune an evaluation.
type Options struct {
	// K is the depth (default DefaultK, at most api.MaxEvalK).
	K int
	// Confidence of the intervals (default DefaultConfidence).
	Confidence float64
	// Progress, if not nil, is called after each query of the set
	// (searched, or failed) with how many are done of how many: what a
	// relevance gate running in the background shows of itself.
	Progress func(done, total int)
}

// CheckOptions fills in defaults and refuses values out of range.
func CheckOptions(o Options) (Options, error) {
	if o.K == 0 {
		o.K = DefaultK
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.K < 1 || o.K > api.MaxEvalK {
		return o, api.BadRequest("k must be between 1 and %d, got %d", api.MaxEvalK, o.K)
	}
	if o.Confidence < 0.5 || o.Confidence > 0.999 {
		return o, api.BadRequest("confidence must be between 0.5 and 0.999, got %g", o.Confidence)
	}
	return o, nil
}

// Evaluate runs every query of set through live and, when cand is not
// nil, through cand, one query at a time in the set's order, and scores
// both at depth k. A query whose search fails (either side) is reported
// with its error and left out of the summary, on both sides, so that the
// comparison stays paired. The report is the same for the same rankings:
// the statistics are seeded.
func Evaluate(ctx context.Context, set *api.JudgementSet, o Options, live, cand SearchFunc) (*api.EvalReport, error) {
	o, err := CheckOptions(o)
	if err != nil {
		return nil, err
	}
	rep := &api.EvalReport{Index: set.Index, Set: set.Name, Version: set.Version, K: o.K, Confidence: o.Confidence, Queries: []api.QueryEval{}}
	for i := range set.Queries {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("evaluate %s: %w", set.Name, err)
		}
		rep.Queries = append(rep.Queries, evalQuery(ctx, &set.Queries[i], o.K, live, cand))
		if o.Progress != nil {
			o.Progress(i+1, len(set.Queries))
		}
	}
	rep.Summary = Summarize(rep.Queries, cand != nil, o.Confidence)
	return rep, nil
}

// evalQuery searches for one judged query through live and, when cand
// is not nil, cand, and scores both at depth k; a failed search is the
// query's Error.
func evalQuery(ctx context.Context, q *api.JudgedQuery, k int, live, cand SearchFunc) api.QueryEval {
	qe := api.QueryEval{Line: q.Line, Q: q.Q}
	for _, r := range q.Ratings {
		if r > 0 {
			qe.Relevant++
		}
	}
	ranking, err := run(ctx, live, q, k)
	if err != nil {
		qe.Error = "live: " + err.Error()
		return qe
	}
	qe.Live = metrics(ranking, q.Ratings, k)
	if cand != nil {
		ranking, err := run(ctx, cand, q, k)
		if err != nil {
			qe.Error = "candidate: " + err.Error()
			return qe
		}
		m := metrics(ranking, q.Ratings, k)
		qe.Candidate = &m
	}
	return qe
}

// run searches for one judged query and returns the ids of its top k.
func run(ctx context.Context, search SearchFunc, q *api.JudgedQuery, k int) ([]string, error) {
	resp, err := search(ctx, Request(q, k))
	if err != nil {
		return nil, err
	}
	return resp.IDs(len(resp.Hits)), nil
}

func metrics(ranking []string, ratings map[string]int, k int) api.QueryMetrics {
	s := Score(ranking, ratings, k)
	return api.QueryMetrics{NDCG: s.NDCG, RR: s.RR, Precision: s.Precision, Recall: s.Recall, Top: ranking[:min(len(ranking), 5)]}
}

// value reads one metric of a query's metrics.
func value(m api.QueryMetrics, metric string) float64 {
	switch metric {
	case NDCG:
		return m.NDCG
	case MRR:
		return m.RR
	case Precision:
		return m.Precision
	case Recall:
		return m.Recall
	case ZeroRelevant:
		if m.RR == 0 { // no relevant document in the top k
			return 1
		}
	}
	return 0
}

// Values returns one metric per query that did not fail, for the live
// side and (paired) the candidate's.
func Values(qs []api.QueryEval, metric string) (live, cand []float64) {
	for _, q := range qs {
		if q.Error != "" {
			continue
		}
		live = append(live, value(q.Live, metric))
		if q.Candidate != nil {
			cand = append(cand, value(*q.Candidate, metric))
		}
	}
	return live, cand
}

// Summarize computes each metric's mean and bootstrap interval over the
// queries that did not fail and, with a candidate, the candidate's, the
// paired difference's and the randomization test's p-value.
func Summarize(qs []api.QueryEval, withCandidate bool, confidence float64) []api.MetricEval {
	out := make([]api.MetricEval, 0, len(Metrics))
	for _, m := range Metrics {
		live, cand := Values(qs, m)
		me := api.MetricEval{Metric: m}
		me.Live.Mean, me.Live.Low, me.Live.High = Interval(live, confidence)
		if withCandidate {
			var c, d api.Estimate
			c.Mean, c.Low, c.High = Interval(cand, confidence)
			diffs := PairedDiffs(live, cand)
			d.Mean, d.Low, d.High = Interval(diffs, confidence)
			me.Candidate, me.Diff = &c, &d
			me.P = RandomizationTest(diffs)
		}
		out = append(out, me)
	}
	return out
}

// CheckGate validates a gate, filling in its defaults (k 10, confidence
// 0.95).
func CheckGate(g *api.Gate) error {
	if len(g.Sets) == 0 {
		return api.BadRequest("a gate needs at least one judgement set (--set)")
	}
	if !slices.Contains(GateMetrics, g.Metric) {
		return api.BadRequest("gate metric must be one of %v, got %q", GateMetrics, g.Metric)
	}
	o, err := CheckOptions(Options{K: g.K, Confidence: g.Confidence})
	if err != nil {
		return err
	}
	g.K, g.Confidence = o.K, o.Confidence
	if g.MaxDrop < 0 || g.MaxDrop > 1 {
		return api.BadRequest("max_drop must be between 0 and 1, got %g", g.MaxDrop)
	}
	return nil
}

// GateSet decides a gate on one set's evaluation (with a candidate): it
// passes when no query failed and the one-sided lower confidence bound
// of the mean paired difference (candidate - live) of the gate's metric
// is at least -MaxDrop: at the gate's confidence, the candidate is no
// more than MaxDrop worse.
func GateSet(g *api.Gate, rep *api.EvalReport) (api.GateSetResult, error) {
	res := api.GateSetResult{Set: rep.Set, Version: rep.Version}
	for _, q := range rep.Queries {
		if q.Error != "" {
			return res, api.Errorf(api.CodeGateFailed, "gate on set %s: line %d (%q) failed: %s", rep.Set, q.Line, q.Q, q.Error)
		}
	}
	live, cand := Values(rep.Queries, g.Metric)
	d := PairedDiffs(live, cand)
	res.Queries = len(d)
	res.Live, res.Candidate, res.Diff = Mean(live), Mean(cand), Mean(d)
	res.Lower = LowerBound(d, g.Confidence)
	res.P = RandomizationTest(d)
	res.Passed = res.Lower >= -g.MaxDrop-1e-12
	return res, nil
}

// Describe says in one line what a gate found, with the figures.
func Describe(r *api.GateResult) string {
	g := r.Gate
	s := fmt.Sprintf("%s@%d must not drop by more than %g at %g%% confidence:", g.Metric, g.K, g.MaxDrop, g.Confidence*100)
	for _, sr := range r.Sets {
		verdict := "passed"
		if !sr.Passed {
			verdict = "FAILED"
		}
		s += fmt.Sprintf(" set %s v%d (%d queries): live %.4f, candidate %.4f, diff %+.4f, lower bound %+.4f, p=%.4f, %s;",
			sr.Set, sr.Version, sr.Queries, sr.Live, sr.Candidate, sr.Diff, sr.Lower, sr.P, verdict)
	}
	return s[:len(s)-1]
}
