package api

import (
	"encoding/json"
	"time"
)

// Limits of judgement lists.
const (
	// MaxJudgementBytes caps a judgement list's NDJSON: with JSON's
	// escaping, a list and its stored form fit NATS's default payload
	// limit of 1 MiB.
	MaxJudgementBytes = 512 << 10
	// MaxJudgedQueries caps the queries of one judgement list.
	MaxJudgedQueries = 5000
	// MaxRatingsPerQuery caps the rated documents of one query.
	MaxRatingsPerQuery = 1000
	// MaxRating is the highest grade: ratings are 0 (not relevant) to 3
	// (perfect).
	MaxRating = 3
	// MaxEvalK caps the depth k of an evaluation.
	MaxEvalK = 1000
)

// JudgedQuery is one line of a judgement list: a query and graded
// ratings of documents for it (docs/relevance.md).
type JudgedQuery struct {
	// Q is the user's text, as in a search request.
	Q string `json:"q"`
	// Query, Filter and Context are as in a search request (optional).
	Query   json.RawMessage `json:"query,omitempty"`
	Filter  json.RawMessage `json:"filter,omitempty"`
	Context json.RawMessage `json:"context,omitempty"`
	// Ratings grade documents by id, 0 (not relevant) to MaxRating
	// (perfect). A document not rated counts as 0.
	Ratings map[string]int `json:"ratings"`
	// Line is the query's line in the file it was pushed from.
	Line int `json:"line,omitempty"`
}

// JudgementSet is a named, versioned judgement list of one index (KV
// bucket quarry-judgements, key <index>.set.<name>, with history). It
// belongs to the index's team.
type JudgementSet struct {
	Index string `json:"index"`
	Name  string `json:"name"`
	// Team owns the set: the index's team (IndexDefinition.TeamOf).
	Team string `json:"team"`
	// Version counts pushes of the set: 1 for the first.
	Version int           `json:"version"`
	Updated time.Time     `json:"updated"`
	Queries []JudgedQuery `json:"queries,omitempty"`
	// NumQueries and NumRatings count what the set holds (ls leaves
	// Queries out).
	NumQueries int `json:"num_queries"`
	NumRatings int `json:"num_ratings"`
}

// Gate is what a plugin version must show on an index's judgement sets
// before `plugin activate` or `plugin promote` puts it live: its Metric
// at K, per query, must not drop from the live pipeline's by more than
// MaxDrop, at Confidence (docs/relevance.md, "The gate"). Stored in the
// quarry-judgements bucket, key <index>.gate.
type Gate struct {
	// Sets are the judgement sets the gate runs; each must pass.
	Sets []string `json:"sets"`
	// Metric is one of ndcg, mrr, precision, recall.
	Metric string `json:"metric"`
	// K is the depth (default 10).
	K int `json:"k"`
	// MaxDrop is the largest acceptable drop of the metric's mean (>= 0).
	MaxDrop float64 `json:"max_drop"`
	// Confidence of the one-sided bound, between 0.5 and 0.999 (default
	// 0.95).
	Confidence float64   `json:"confidence"`
	Updated    time.Time `json:"updated"`
}

// GateResult is what a gate found for one plugin version (stored with the
// version, shown by `plugin show`).
type GateResult struct {
	Plugin string    `json:"plugin"`
	Digest string    `json:"digest"`
	Time   time.Time `json:"time"`
	Gate   Gate      `json:"gate"`
	// Sets has one comparison per judgement set.
	Sets []GateSetResult `json:"sets"`
	// Passed is true when every set passed.
	Passed bool `json:"passed"`
	// Forced, when the gate failed, says the version went live anyway
	// (--force), and Reason why.
	Forced bool   `json:"forced,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// GateProgress is a relevance gate running in the background on a change
// about to go live (plugin.ls's "gate", a gate_running error's
// Running): what it checks and how far it got.
type GateProgress struct {
	Index string `json:"index"`
	// Plugin and Digest name the version it checks; Plugin is
	// "pipeline" (and Digest empty) for a whole pipeline (pipeline.set).
	Plugin string `json:"plugin"`
	Digest string `json:"digest,omitempty"`
	// What is the change that goes live if it passes, as the pipeline's
	// history will name it ("plugin activate boost 1a2b3c4d5e6f").
	What    string    `json:"what"`
	Started time.Time `json:"started"`
	// Deadline is when the gate stops at the latest (its start and the
	// registry's --gate-timeout); its outcome is recorded within seconds
	// after it.
	Deadline time.Time `json:"deadline"`
	// Done counts the judged queries evaluated so far (each searched
	// through the live pipeline and the candidate), of Total over all
	// the gate's sets; Set is the set being evaluated.
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Set   string `json:"set,omitempty"`
}

// GateSetResult is the gate's comparison on one judgement set.
type GateSetResult struct {
	Set     string `json:"set"`
	Version int    `json:"version"`
	Queries int    `json:"queries"`
	// Live and Candidate are the metric's means.
	Live      float64 `json:"live"`
	Candidate float64 `json:"candidate"`
	// Diff is Candidate - Live; Lower is the one-sided lower confidence
	// bound of the mean difference (paired bootstrap), P the paired
	// randomization test's two-sided p-value.
	Diff   float64 `json:"diff"`
	Lower  float64 `json:"lower"`
	P      float64 `json:"p"`
	Passed bool    `json:"passed"`
	// Error, when the set could not be evaluated (a search failed), says
	// why; the set then fails.
	Error string `json:"error,omitempty"`
}

// EvalRequest asks for an evaluation of an index's live pipeline, and a
// candidate beside it, on a judgement set (admin judgements.eval).
type EvalRequest struct {
	Set string `json:"set"`
	K   int    `json:"k,omitempty"`
	// Variant, when set, is the candidate: a pushed, validated version of
	// a plugin in place of the live one (or added, if the plugin is not
	// live).
	Variant *Variant `json:"variant,omitempty"`
	// Pipeline, in place of Variant, is a whole candidate pipeline: every
	// step a pushed, validated version of the index's plugins.
	Pipeline *PipelineSpec `json:"pipeline,omitempty"`
	// Confidence of the intervals (default 0.95).
	Confidence float64 `json:"confidence,omitempty"`
}

// EvalReport is an evaluation: the metrics per query and in sum, for the
// live pipeline and, with a variant, the candidate.
type EvalReport struct {
	Index      string       `json:"index"`
	Set        string       `json:"set"`
	Version    int          `json:"version"`
	K          int          `json:"k"`
	Confidence float64      `json:"confidence"`
	Variant    *Variant     `json:"variant,omitempty"`
	Queries    []QueryEval  `json:"queries"`
	Summary    []MetricEval `json:"summary"`
}

// QueryEval is one judged query's metrics.
type QueryEval struct {
	Line int    `json:"line"`
	Q    string `json:"q"`
	// Relevant counts the query's documents rated above 0.
	Relevant  int           `json:"relevant"`
	Live      QueryMetrics  `json:"live"`
	Candidate *QueryMetrics `json:"candidate,omitempty"`
	Error     string        `json:"error,omitempty"`
}

// QueryMetrics are one ranking's metrics for one query.
type QueryMetrics struct {
	NDCG      float64  `json:"ndcg"`
	RR        float64  `json:"rr"`
	Precision float64  `json:"precision"`
	Recall    float64  `json:"recall"`
	Top       []string `json:"top,omitempty"`
}

// MetricEval is one metric over every query: the live pipeline's mean
// with its bootstrap interval, and with a candidate the candidate's, the
// mean difference with its interval and the paired test's p-value.
type MetricEval struct {
	// Metric is ndcg, mrr, precision, recall or zero_relevant (the share
	// of queries with no relevant document in the top k: lower is
	// better).
	Metric    string    `json:"metric"`
	Live      Estimate  `json:"live"`
	Candidate *Estimate `json:"candidate,omitempty"`
	Diff      *Estimate `json:"diff,omitempty"`
	// P is the two-sided p-value of the paired randomization test of the
	// difference.
	P float64 `json:"p,omitempty"`
}

// Estimate is a mean and its two-sided bootstrap confidence interval.
type Estimate struct {
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}
