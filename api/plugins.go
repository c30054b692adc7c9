package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// PipelineSpec is an index's plugin pipeline as stored (KV bucket
// quarry-pipelines, with history: any earlier pipeline can be restored).
type PipelineSpec struct {
	Index     string     `json:"index"`
	Rewriters []StepSpec `json:"rewriters,omitempty"`
	Rankers   []StepSpec `json:"rankers,omitempty"`
	Updated   time.Time  `json:"updated"`
	// Revision is the KV revision the spec was read at.
	Revision uint64 `json:"revision,omitempty"`
	// RestoredFrom, on a pipeline a rollback wrote, is the revision whose
	// steps it restored; the next rollback goes on from the one before
	// it, so rollbacks walk back through history instead of undoing each
	// other.
	RestoredFrom uint64 `json:"restored_from,omitempty"`
	// Change says what wrote this revision: "plugin activate ltr
	// sha256:…", "rollback", "file examples/pipelines/menu.json", "demo",
	// "automatic fallback: spelling taken out"… (`quarry pipeline show`).
	Change string `json:"change,omitempty"`
	// Source, on a revision a pipeline file wrote, names the file and the
	// digest of what it said (SourceFile): a broker restarted with the
	// same file does not write it again over later changes.
	Source string `json:"source,omitempty"`
	// Gate, on a revision the relevance gate let through (plugin
	// activate, promote, pipeline set on an index with a gate), is what
	// it found.
	Gate *GateResult `json:"gate,omitempty"`
}

// StepKind is a plugin step's hook: what the plugin is called for.
type StepKind string

// Step kinds.
const (
	// Rewriter turns the request into the one the index is searched with.
	Rewriter StepKind = "rewriter"
	// Ranker re-orders the merged hits.
	Ranker StepKind = "ranker"
)

// Check reports a kind that is neither Rewriter nor Ranker.
func (k StepKind) Check() error {
	if k != Rewriter && k != Ranker {
		return BadRequest("kind must be %q or %q, got %q", Rewriter, Ranker, string(k))
	}
	return nil
}

// Steps returns the pipeline's steps of kind: its rewriters or its
// rankers, for reading or changing in place.
func (p *PipelineSpec) Steps(kind StepKind) *[]StepSpec {
	if kind == Ranker {
		return &p.Rankers
	}
	return &p.Rewriters
}

// Step returns plugin name's step in the pipeline and its kind; nil and
// "" if the plugin has no step in it.
func (p *PipelineSpec) Step(name string) (*StepSpec, StepKind) {
	for _, kind := range [...]StepKind{Rewriter, Ranker} {
		steps := *p.Steps(kind)
		for i := range steps {
			if steps[i].Plugin == name {
				return &steps[i], kind
			}
		}
	}
	return nil, ""
}

// StepOf returns plugin name's step among the pipeline's steps of kind,
// or nil.
func (p *PipelineSpec) StepOf(kind StepKind, name string) *StepSpec {
	if st, k := p.Step(name); k == kind {
		return st
	}
	return nil
}

// Policy is what a failed plugin step does to the query.
type Policy string

// Failure policies.
const (
	// FailOpen skips the step and says so in the response (the default).
	FailOpen Policy = "fail-open"
	// FailClosed fails the query with an error naming the plugin.
	FailClosed Policy = "fail-closed"
)

// Check reports a policy that is neither (empty is FailOpen).
func (p Policy) Check() error {
	switch p {
	case "", FailOpen, FailClosed:
		return nil
	}
	return BadRequest("policy must be %q or %q, got %q", FailOpen, FailClosed, string(p))
}

// ShortDigest is a plugin digest ("sha256:<hex>") as a version: its
// first 12 hex digits.
func ShortDigest(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	return d[:min(12, len(d))]
}

// PipelineStatus is what one broker runs: for each index, the pipeline
// revision it has swapped in (0: none). `quarry pipeline show` asks every
// broker, so that it prints what runs, not only what is stored.
type PipelineStatus struct {
	Broker    string            `json:"broker"`
	Revisions map[string]uint64 `json:"revisions"`
}

// StepSpec is one plugin step of a pipeline.
type StepSpec struct {
	Plugin string `json:"plugin"`
	// Digest names the plugin binary in the quarry-plugins object store:
	// "sha256:<hex>".
	Digest string          `json:"digest"`
	Config json.RawMessage `json:"config,omitempty"`
	// BudgetMS is the hard limit of one call: a call that takes longer
	// is stopped and fails (default 50).
	BudgetMS int `json:"budget_ms,omitempty"`
	// LatencyBudgetMS, when set, is the latency the step should keep
	// under (at most BudgetMS): when more than the broker's share
	// (--fallback-slow-rate, default 1%: "p99 over the budget") of the
	// step's recent calls take longer, the automatic fallback acts as it
	// does on errors (fail-open: the step is skipped; fail-closed: the
	// plugin is rolled back to its last good version).
	LatencyBudgetMS int `json:"latency_budget_ms,omitempty"`
	// Policy is what a failure of the step does to the query (empty:
	// FailOpen).
	Policy      Policy   `json:"policy,omitempty"`
	Fields      []string `json:"fields,omitempty"`
	RerankDepth int      `json:"rerank_depth,omitempty"`
	Instances   int      `json:"instances,omitempty"`
	// Canary sends a share of queries to a candidate version of this
	// plugin.
	Canary *CanarySpec `json:"canary,omitempty"`
	// Shadow runs a candidate version of this plugin on mirrored queries;
	// its results are never returned, only compared: a ranker's shadow
	// reorders the same candidates, a rewriter's shadow rewrites the
	// request and the rest of the search (plan, fan-out, merge, the live
	// rankers) runs again in the background for the final top 10.
	Shadow *ShadowSpec `json:"shadow,omitempty"`
	// TakenOut, when set, says why the automatic fallback took this
	// fail-open step out: every broker skips it (and says so in each
	// response) until a version of the plugin is activated again. It is
	// kept in every later revision, so a change to another step does not
	// bring a failing plugin back.
	TakenOut *TakenOut `json:"taken_out,omitempty"`
}

// TakenOut records the automatic fallback taking a step out.
type TakenOut struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
}

// ShadowSpec is a candidate version (ranker or rewriter) run on a share of
// queries for comparison.
type ShadowSpec struct {
	Step StepSpec `json:"step"`
	// Percent of queries (1-100) mirrored to the candidate.
	Percent int `json:"percent"`
}

// ShadowStats compares a shadow with the live version over the queries
// mirrored to it, summed over every broker. For a ranker, the orders of
// the same candidates are compared; for a rewriter, the final top 10 of
// the live response and of the search run with the candidate's request.
type ShadowStats struct {
	Index   string `json:"index"`
	Plugin  string `json:"plugin"`
	Queries int64  `json:"queries"`
	// OverlapAt10 is the mean share of the live top 10 the shadow also
	// ranks in its top 10.
	OverlapAt10 float64 `json:"overlap_at_10"`
	// RankCorrelation is the mean Spearman correlation of the two orders
	// over the candidates both ranked (rewriters: over the documents in
	// both top 10s; 0 for a query with none in common).
	RankCorrelation float64 `json:"rank_correlation"`
	// LiveMS and ShadowMS are mean call times; Errors count failed calls.
	LiveMS       float64 `json:"live_ms"`
	ShadowMS     float64 `json:"shadow_ms"`
	LiveErrors   int64   `json:"live_errors"`
	ShadowErrors int64   `json:"shadow_errors"`
}

// CanarySpec is a candidate version taking a share of an index's queries.
type CanarySpec struct {
	// Step is the candidate's step (its digest and settings).
	Step StepSpec `json:"step"`
	// Percent of queries (1-100) go to the candidate.
	Percent int `json:"percent"`
	// StickyKey names a field of the request's context (e.g. "user"):
	// queries with the same value always get the same version. Without
	// it, or when a query lacks the field, the choice is random.
	StickyKey string `json:"sticky_key,omitempty"`
	// Interleave, when set, makes the canary an interleaving experiment
	// (rankers only): the chosen queries get a team-draft interleaving of
	// the live and the candidate rankings, users' clicks credit the side
	// that placed what they clicked, and a sequential test promotes the
	// candidate or rolls it back by itself (docs/relevance.md).
	Interleave *InterleaveSpec `json:"interleave,omitempty"`
}

// InterleaveSpec is an interleaving experiment's sequential test; zero
// fields take the defaults (docs/relevance.md, "Interleaving").
type InterleaveSpec struct {
	// Delta is the difference in the share of won queries the test is
	// built to tell: H+ "the candidate wins 0.5+Delta" against H- "0.5 -
	// Delta" (default 0.1).
	Delta float64 `json:"delta,omitempty"`
	// Alpha bounds the chance of promoting a candidate that is worse by
	// Delta, Beta of rolling back one better by Delta (default 0.05 each).
	Alpha float64 `json:"alpha,omitempty"`
	Beta  float64 `json:"beta,omitempty"`
	// MaxQueries ends the experiment with the candidate rolled back when
	// this many queries had a winner and the test has not decided
	// (default 2000).
	MaxQueries int `json:"max_queries,omitempty"`
}

// InterleavedQuery is what a broker records of one interleaved search
// (KV bucket quarry-interleave, key <index>.<query_id>, a day): which
// side placed each document shown, and the clicks credited so far.
type InterleavedQuery struct {
	Plugin string `json:"plugin"`
	// Candidate and Live are the two versions' digests.
	Candidate string `json:"candidate"`
	Live      string `json:"live"`
	// Teams maps a document id to the side that placed it: 1 live, 2
	// candidate.
	Teams map[string]uint8 `json:"teams"`
	// Clicked are the documents whose clicks were credited, once each.
	Clicked         []string `json:"clicked,omitempty"`
	LiveClicks      int      `json:"live_clicks,omitempty"`
	CandidateClicks int      `json:"candidate_clicks,omitempty"`
}

// CanaryStats is an interleaving experiment's running tally (`quarry
// plugin canary-stats`): of the interleaved queries with credited clicks,
// how many the candidate won, lost and tied, the sequential test's state
// and, once it decided, what Quarry did.
type CanaryStats struct {
	Index     string `json:"index"`
	Plugin    string `json:"plugin"`
	Candidate string `json:"candidate"`
	Live      string `json:"live"`
	Wins      int    `json:"wins"`
	Losses    int    `json:"losses"`
	Ties      int    `json:"ties"`
	Clicks    int    `json:"clicks"`
	// LLR is the test's log likelihood ratio, Upper and Lower its
	// boundaries.
	LLR   float64        `json:"llr"`
	Upper float64        `json:"upper"`
	Lower float64        `json:"lower"`
	Test  InterleaveSpec `json:"test"`
	// State is running, promoted, or rolled back.
	State   string    `json:"state"`
	Decided time.Time `json:"decided,omitzero"`
	Reason  string    `json:"reason,omitempty"`
}

// PluginVersion is a pushed plugin binary and what validation said of it.
type PluginVersion struct {
	Index  string   `json:"index"`
	Name   string   `json:"name"`
	Kind   StepKind `json:"kind"`
	Digest string   `json:"digest"`
	Size   int64    `json:"size"`
	// Step holds the settings the plugin is activated with.
	Step   StepSpec  `json:"step"`
	Pushed time.Time `json:"pushed"`
	// Valid is true when every check passed; Error names the one that
	// failed.
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
	// Gate is what the index's relevance gate found the last time the
	// version was activated or promoted (nil: no gate ran).
	Gate *GateResult `json:"gate,omitempty"`
}

// ShadowTally is one broker's running sums for a shadow (ranker or
// rewriter), as published to the quarry-shadow bucket.
type ShadowTally struct {
	Queries      int64   `json:"queries"`
	OverlapSum   float64 `json:"overlap_sum"`
	RhoSum       float64 `json:"rho_sum"`
	LiveNS       int64   `json:"live_ns"`
	ShadowNS     int64   `json:"shadow_ns"`
	Calls        int64   `json:"calls"`
	LiveErrors   int64   `json:"live_errors"`
	ShadowErrors int64   `json:"shadow_errors"`
}

// PluginEvent is something the platform did to a plugin on its own, such
// as taking a failing version out or rolling it back to the last good
// version.
type PluginEvent struct {
	Index   string    `json:"index"`
	Plugin  string    `json:"plugin"`
	Version string    `json:"version"`
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	Reason  string    `json:"reason"`
	Broker  string    `json:"broker"`
	// Gate, on an event of a relevance gate (EventGateLive and the
	// others), is what it found.
	Gate *GateResult `json:"gate,omitempty"`
	// Code, on EventGateRefused and EventGateStopped, is the error the
	// change's request would have answered (gate_failed, timeout,
	// conflict, …); Reason is its message.
	Code Code `json:"code,omitempty"`
}

// Plugin events the registry records when a relevance gate that ran on
// in the background (a gate_running answer) ends: the change went live
// (the gate passed, or failed and was forced), the gate refused it, or
// the gate or the change stopped for another reason (its time ran out,
// the pipeline changed under a promotion). Plugin and Version are the
// version's name and short digest, or "pipeline" and "set".
const (
	EventGateLive    = "gate passed: now live"
	EventGateForced  = "gate overridden: now live"
	EventGateRefused = "gate refused"
	EventGateStopped = "gate stopped"
)

// MaxValidationSamples caps the sample requests a team sends with a plugin
// version; the registry adds up to as many of the index's recorded queries.
const MaxValidationSamples = 100

// TeamSettings are one team's limits on every broker (KV bucket
// quarry-teams, set with `quarry team set`). Zero fields take the broker's
// defaults.
type TeamSettings struct {
	Name string `json:"name"`
	// Rate caps the team's searches per second over the cluster, each
	// broker admitting its share (0: no cap); a search counts once for
	// each of the brokers' RateUnit (broker.Config, default 50ms) of its
	// time, so expensive searches use the rate up sooner. Burst is how
	// many may come at once above it (default: one second's worth). Over
	// it: 429 overloaded with Retry-After, when the rate allows the next.
	Rate  float64 `json:"rate,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// MaxInFlight caps the team's searches running at once on each broker
	// (0: the broker's --team-max-in-flight), so that one team cannot
	// take every slot.
	MaxInFlight int       `json:"max_in_flight,omitempty"`
	Updated     time.Time `json:"updated"`
}

// MinTeamRate and MaxTeamRate bound a team's rate (TeamSettings.Rate,
// searches per second) other than 0. Below one search a minute the team
// is not limited but shut out: at 1e-9 its second search was told to
// retry after 277,777 hours.
const (
	MinTeamRate = 1.0 / 60
	MaxTeamRate = 1e6
)

// Validate checks the settings, naming what is wrong.
func (t *TeamSettings) Validate() error {
	switch {
	case t.Name == "":
		return BadRequest("team name is required")
	case t.Rate != 0 && !(t.Rate >= MinTeamRate && t.Rate <= MaxTeamRate): // NaN too
		return BadRequest("rate must be 0 (no cap) or between %.3g (one search a minute) and %g searches/s, got %g", MinTeamRate, float64(MaxTeamRate), t.Rate)
	case t.Burst < 0 || t.Burst > 1e6:
		return BadRequest("burst must be between 0 (one second's worth) and 1000000, got %d", t.Burst)
	case t.MaxInFlight < 0:
		return BadRequest("max_in_flight must be >= 0 (0: the broker's default), got %d", t.MaxInFlight)
	}
	return nil
}

// Token is an HTTP API token as stored (KV bucket quarry-tokens, keyed by
// the hex sha256 of the token, which is shown once, when it is made). A
// team token acts on its team's indexes only, and only as far as its
// Scope lets it (docs/teams.md); an operator token may do everything.
type Token struct {
	// ID is the first 12 hex digits of the token's sha256: what `quarry
	// token ls` shows and `quarry token revoke` takes.
	ID       string `json:"id"`
	Team     string `json:"team,omitempty"`
	Operator bool   `json:"operator,omitempty"`
	// Scope is what a team token may do on its team's indexes:
	// ScopeSearch, ScopeWrite or ScopeAdmin. Empty on an operator token
	// (it may do everything) and on a team token stored before tokens had
	// scopes, which is ScopeAdmin (ScopeOf).
	Scope   string    `json:"scope,omitempty"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
}

// The scopes of a team token, narrowest first: each may do what the one
// before it may, and more, on the team's own indexes.
const (
	// ScopeSearch searches and reads documents by id: a key a browser or
	// a front-end app may hold.
	ScopeSearch = "search"
	// ScopeWrite also writes and deletes documents and records user
	// events.
	ScopeWrite = "write"
	// ScopeAdmin also does everything else a team may: plugins,
	// pipelines, judgements, gates, reports. A team token's default.
	ScopeAdmin = "admin"
)

// TokenScopes are the scopes, narrowest first.
var TokenScopes = []string{ScopeSearch, ScopeWrite, ScopeAdmin}

// ValidTokenScope is nil when scope is one of TokenScopes, else a
// bad_request naming them.
func ValidTokenScope(scope string) error {
	if slices.Contains(TokenScopes, scope) {
		return nil
	}
	return BadRequest("token scope %q: want %s", scope, strings.Join(TokenScopes, ", "))
}

// ScopeOf is what t may do as a team token: its Scope, or ScopeAdmin for
// one stored without a scope (before tokens had them, when every team
// token could do what ScopeAdmin may). Empty for an operator's token.
func (t Token) ScopeOf() string {
	switch {
	case t.Operator:
		return ""
	case t.Scope == "":
		return ScopeAdmin
	}
	return t.Scope
}

// ScopeCovers reports whether a team token of scope have may do what
// needs scope need (need "": anything a token may). A scope this version
// does not know covers nothing but "".
func ScopeCovers(have, need string) bool {
	if need == "" {
		return true
	}
	h, n := slices.Index(TokenScopes, have), slices.Index(TokenScopes, need)
	return h >= 0 && n >= 0 && h >= n
}

// TokenKey is how a token is stored and looked up: the hex sha256 of it.
// Tokens are 256 random bits, so a plain hash is enough: nothing to guess.
func TokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
