package planner

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/strictjson"
)

// Config holds the planner's defaults. Zero values are documented defaults.
type Config struct {
	// DefaultTimeout is a request's deadline when it gives no timeout_ms
	// (default 2s).
	DefaultTimeout time.Duration
	// MaxTimeout caps timeout_ms (default 60s).
	MaxTimeout time.Duration
	// MergeReserve is kept back from the shards' deadline for merging,
	// ranking and encoding (default 10% of the timeout, at most 20ms).
	MergeReserve time.Duration
	// Hedge is the default hedging policy.
	Hedge Hedge
	// MaxExplain caps from+size of a request that asks to explain
	// (default DefaultMaxExplain). Every shard explains each of its
	// from+size hits, and an explanation is kilobytes: 10,000 of them made
	// a response of 35 MB, built before its size could be checked.
	MaxExplain int
	// Mapping returns an index's bleve mapping, with which the planner
	// analyses q's words as its fields do (nil, or a nil result: words
	// are not analysed). Only a query that needs it asks for it: operator
	// "and" with typos or prefixes, where a word that analyses to nothing
	// (a stop word) must not be required.
	Mapping func(def *api.IndexDefinition) mapping.IndexMapping
	// ShardDepth is how many times its share of the K hits (K / shards)
	// each shard of a search over several is first asked for, plus
	// ShardDepthSlack: a shard whose last hit could still be among the
	// merged top K is then asked again for all K (Plan.ShardK). Default
	// DefaultShardDepth; negative: every shard is asked for K in one
	// round, as one index would need.
	ShardDepth float64
}

// DefaultShardDepth is Config.ShardDepth's default. On hash sharding a
// shard's share of the top K is binomial (K=50 over 4 shards: mean
// 12.5, standard deviation 3.1), so 1.5 times the share plus
// ShardDepthSlack (24 of 50) almost never needs a second round.
const DefaultShardDepth = 1.5

// ShardDepthSlack is added to each shard's first-round depth, so that a
// small K (10 over 4 shards: 9) is not cut at the share's noise.
const ShardDepthSlack = 5

// DefaultMaxExplain is Config.MaxExplain's default: a page to read, not
// a result set to export.
const DefaultMaxExplain = 100

// Hedge says when a slow shard is asked again, on another replica.
type Hedge struct {
	// Enabled turns hedging on.
	Enabled bool `json:"enabled"`
	// Quantile of the shard's recent latencies after which it is hedged
	// (default 0.95).
	Quantile float64 `json:"quantile"`
	// MinDelay is the earliest a hedge is sent (default 1ms).
	MinDelay time.Duration `json:"min_delay_ns"`
	// InitialDelay is the hedge delay while a shard has too few recent
	// answers for a quantile (default 100ms).
	InitialDelay time.Duration `json:"initial_delay_ns"`
	// MaxFraction caps hedges as a share of shard requests (default 0.05).
	MaxFraction float64 `json:"max_fraction"`
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 2 * time.Second
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 60 * time.Second
	}
	if c.DefaultTimeout > c.MaxTimeout {
		return fmt.Errorf("planner: default timeout %s is over the max timeout %s", c.DefaultTimeout, c.MaxTimeout)
	}
	if c.MergeReserve < 0 {
		return fmt.Errorf("planner: merge reserve must be >= 0")
	}
	if c.MaxExplain == 0 {
		c.MaxExplain = DefaultMaxExplain
	}
	if c.ShardDepth == 0 {
		c.ShardDepth = DefaultShardDepth
	}
	if math.IsNaN(c.ShardDepth) || math.IsInf(c.ShardDepth, 0) {
		return fmt.Errorf("planner: shard depth must be a number, got %v", c.ShardDepth)
	}
	if c.MaxExplain < 0 || c.MaxExplain > api.MaxWindow {
		return fmt.Errorf("planner: max explain must be between 1 and %d, got %d", api.MaxWindow, c.MaxExplain)
	}
	h := &c.Hedge
	if h.Quantile == 0 {
		h.Quantile = 0.95
	}
	if h.MinDelay == 0 {
		h.MinDelay = time.Millisecond
	}
	if h.MaxFraction == 0 {
		h.MaxFraction = 0.05
	}
	if h.InitialDelay == 0 {
		h.InitialDelay = 100 * time.Millisecond
	}
	if h.Quantile <= 0 || h.Quantile >= 1 || h.MaxFraction < 0 || h.MaxFraction > 1 {
		return fmt.Errorf("planner: hedge quantile must be in (0,1) and max fraction in [0,1]")
	}
	return nil
}

// Hints are what earlier pipeline steps (rewriter plugins) ask of the plan.
type Hints struct {
	// Query replaces the query built from the request.
	Query json.RawMessage `json:"query,omitempty"`
	// RerankDepth asks each shard for this many hits, for a ranker to
	// re-order, instead of from+size.
	RerankDepth int `json:"rerank_depth,omitempty"`
	// Ranking is what the index's rankers need, when it has any.
	Ranking *Ranking `json:"ranking,omitempty"`
	// TypoWords are, by field, the words of q that take typos under
	// typo tolerance "auto" (api.QuerySettings.Typos): those no field
	// holds as typed (UnknownWords, from the statistics of q as typed).
	// Nil: none.
	TypoWords map[string][]string `json:"-"`
}

// Ranking is what an index's rankers need of a plan: their candidates
// from every shard (the deepest rerank depth), with the stored fields
// they read. The broker's pipeline says (canaries included; shadows rank
// what the live ranker got).
type Ranking struct {
	Depth  int      `json:"depth,omitempty"`
	Fields []string `json:"fields,omitempty"`
}

// Plan is how a request will run.
type Plan struct {
	Index string `json:"index"`
	// PIT is the point in time the search reads, once the broker has
	// opened or found it; nil reads the shards' documents now.
	PIT *PointInTime `json:"pit,omitempty"`
	// Query is the retrieval query, a bleve query in JSON.
	Query json.RawMessage `json:"query"`
	// Shards are the shards to ask.
	Shards []int `json:"shards"`
	// K is how many hits the merge needs: the page's end, or the
	// rankers' depth.
	K int `json:"k"`
	// ShardK is how many hits each shard returns in the first round
	// (Config.ShardDepth): K on one shard, fewer on several. A shard that
	// returned all ShardK and whose last hit ranks above the merged K-th
	// may hold more of the top K, and is asked again for K
	// (fanout.Deeper); every other shard's hits not returned rank
	// below its last, so below the K-th.
	ShardK int      `json:"shard_k"`
	From   int      `json:"from"`
	Size   int      `json:"size"`
	Sort   []string `json:"sort,omitempty"`
	// SortShown is how many of Sort the request gave: a sort without
	// "_id" gets it last, a tie-break that makes the order total (what a
	// cursor needs), whose values the response does not show.
	SortShown int `json:"sort_shown,omitempty"`
	// SearchAfter are the sort values the shards start after (the
	// request's cursor, decoded): one a key of Sort.
	SearchAfter []string                    `json:"search_after,omitempty"`
	Fields      []string                    `json:"fields,omitempty"`
	Facets      map[string]api.FacetRequest `json:"facets,omitempty"`
	// Timeout is the whole request's budget; ShardTimeout the shards'
	// share of it (the rest is kept for merge, rank and encode).
	Timeout      time.Duration `json:"timeout_ns"`
	ShardTimeout time.Duration `json:"shard_timeout_ns"`
	Hedge        Hedge         `json:"hedge"`
	AllowPartial bool          `json:"allow_partial"`
	// ExactScoring asks the shards for the query's term statistics first,
	// so scores are those of one index (not needed when sorting by fields
	// only).
	ExactScoring bool `json:"exact_scoring"`
	// MaxTerms bounds the terms one shard's search may read, expansions
	// included (the index's query.limits.max_terms).
	MaxTerms int `json:"max_terms"`
	// MaxWindow bounds K, a ranker's rerank depth included (the index's
	// query.limits.max_window).
	MaxWindow int `json:"max_window"`
	// Ranking says the index's rankers order the hits (Hints.Ranking):
	// there is a page to return and no sort (a sorted page is in its
	// sort's order, and so can be paged with a cursor). ExtraFields are
	// the fields they read that the request did not ask for: in Fields
	// for the shards, taken out of the hits once ranked.
	Ranking     bool     `json:"ranking,omitempty"`
	ExtraFields []string `json:"extra_fields,omitempty"`
	// Suggest, when the request asks for suggestions, and SuggestText,
	// the q they complete (its last word, api.SuggestWord; all of it on
	// a field that keeps values whole), trimmed.
	Suggest     *api.SuggestRequest `json:"suggest,omitempty"`
	SuggestText string              `json:"suggest_text,omitempty"`
}

// Planner makes plans.
type Planner struct {
	cfg Config
}

// New makes a planner.
func New(cfg Config) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg}, nil
}

// Plan plans req against the index def, with hints from earlier pipeline
// steps (may be nil). Errors are api.ErrBadRequest errors naming the field.
func (p *Planner) Plan(req *api.SearchRequest, def api.IndexDefinition, hints *Hints) (*Plan, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := p.CheckExplain(req); err != nil {
		return nil, err
	}
	limits := def.Query.Limits.Effective()
	if err := checkRequest(req, limits); err != nil {
		return nil, err
	}
	var q query.Query
	var err error
	if hints != nil && len(hints.Query) > 0 {
		if q, err = parse("hints.query", hints.Query); err != nil {
			return nil, err
		}
		q, err = withFilter(q, req.Filter)
	} else {
		var m mapping.IndexMapping
		if p.cfg.Mapping != nil && needsAnalysis(req, def.Query) {
			m = p.cfg.Mapping(&def)
		}
		var typoWords map[string][]string
		if hints != nil {
			typoWords = hints.TypoWords
		}
		q, err = BuildQuery(req, def.Query, m, typoWords)
	}
	if err != nil {
		return nil, err
	}
	if err := checkQuery(q, limits); err != nil {
		return nil, err
	}
	qJSON, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("encode query: %w", err)
	}
	size := req.EffectiveSize()
	k := req.From + size
	if hints != nil && hints.RerankDepth > 0 && req.SearchAfter == "" { // a cursor's page is not reranked
		// A rewriter's wish, held to the index's window.
		k = max(k, min(hints.RerankDepth, limits.MaxWindow))
	}
	exact := scoresMatter(req.Sort) && req.Scoring != api.ScoringShard
	if size == 0 {
		// No hits (the total and facets only): shards return none, and
		// no statistics are gathered for scores nobody sees.
		k, exact = 0, false
	}
	timeout := p.Timeout(req)
	reserve := p.cfg.MergeReserve
	if reserve == 0 {
		reserve = min(timeout/10, 20*time.Millisecond)
	}
	reserve = min(reserve, timeout/2)
	shards := make([]int, def.Shards)
	for i := range shards {
		shards[i] = i
	}
	sort := req.Sort
	if len(sort) > 0 && !slices.ContainsFunc(sort, func(s string) bool { return strings.TrimPrefix(s, "-") == "_id" }) {
		sort = append(slices.Clip(sort), "_id")
	}
	var after []string
	if req.SearchAfter != "" {
		if after, err = DecodeCursor(req.SearchAfter, len(sort)); err != nil {
			return nil, err
		}
	}
	plan := &Plan{
		Index: def.Name, Query: qJSON, Shards: shards, K: k, From: req.From, Size: size,
		Sort: sort, SortShown: len(req.Sort), SearchAfter: after, Fields: req.Fields, Facets: req.Facets,
		Timeout: timeout, ShardTimeout: timeout - reserve, Hedge: p.cfg.Hedge,
		AllowPartial: req.PartialAllowed(), ExactScoring: exact, MaxTerms: limits.MaxTerms, MaxWindow: limits.MaxWindow,
	}
	if req.Suggest != nil {
		plan.Suggest, plan.SuggestText = req.Suggest, strings.TrimSpace(req.Q)
	}
	if rk := hints.ranking(); rk != nil && size > 0 && len(req.Sort) == 0 {
		plan.Ranking = true
		plan.ExtraFields = extraFields(req.Fields, rk.Fields)
		plan.Fields = append(slices.Clip(req.Fields), plan.ExtraFields...)
		plan.K = max(plan.K, min(rk.Depth, limits.MaxWindow))
	}
	plan.ShardK = p.shardK(plan.K, len(shards))
	return plan, nil
}

// shardK is the first round's depth for each of n shards, for a merged
// depth of k (Config.ShardDepth).
func (p *Planner) shardK(k, n int) int {
	if n < 2 || p.cfg.ShardDepth < 0 {
		return k
	}
	share := int(math.Ceil(float64(k)/float64(n)*p.cfg.ShardDepth)) + ShardDepthSlack
	return min(share, k)
}

// ranking is h's Ranking (nil for no hints).
func (h *Hints) ranking() *Ranking {
	if h == nil {
		return nil
	}
	return h.Ranking
}

// extraFields are the fields of read not in asked, once each (none when
// asked has "*": every field is loaded).
func extraFields(asked, read []string) []string {
	if slices.Contains(asked, "*") {
		return nil
	}
	var extra []string
	for _, f := range read {
		if !slices.Contains(asked, f) && !slices.Contains(extra, f) {
			extra = append(extra, f)
		}
	}
	return extra
}

// EncodeCursor makes the cursor of a hit from its sort values, one a key
// of the plan's Sort (SearchResponse.Next): a version byte, then each
// value's length and bytes (bleve's encoded sort values are bytes, not
// text), in URL-safe base64.
func EncodeCursor(values []string) string {
	b := []byte{cursorVersion}
	for _, v := range values {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

const cursorVersion = 1

// DecodeCursor reads a cursor EncodeCursor made for a sort of keys keys,
// or says it is not one.
func DecodeCursor(cursor string, keys int) ([]string, error) {
	bad := api.BadRequest("search_after is not the cursor of a page of this search's sort (a response's next, as given)")
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) == 0 || b[0] != cursorVersion {
		return nil, bad
	}
	b = b[1:]
	values := make([]string, 0, keys)
	for len(b) > 0 && len(values) < keys {
		n, used := binary.Uvarint(b)
		if used <= 0 || n > uint64(len(b)-used) {
			return nil, bad
		}
		values = append(values, string(b[used:used+int(n)]))
		b = b[used+int(n):]
	}
	if len(values) != keys || len(b) != 0 {
		return nil, bad
	}
	return values, nil
}

// CheckExplain refuses, with query_too_complex naming the limit, a
// request that asks to explain more hits (from+size) than
// Config.MaxExplain. Plan checks it; a broker checks it before the
// rewriters too, so that such a request costs nothing.
func (p *Planner) CheckExplain(req *api.SearchRequest) error {
	if !req.Explain {
		return nil
	}
	if w := req.From + req.EffectiveSize(); w > p.cfg.MaxExplain {
		return api.Errorf(api.CodeQueryTooComplex, "query too complex: explain asks for the explanations of from+size %d hits, over the limit of %d (the broker's --max-explain); explain a smaller page", w, p.cfg.MaxExplain)
	}
	return nil
}

// scoresMatter reports whether hits are ordered (or tie-broken) by score:
// with no sort, or a sort that names _score.
func scoresMatter(sort []string) bool {
	if len(sort) == 0 {
		return true
	}
	for _, s := range sort {
		if s == "_score" || s == "-_score" {
			return true
		}
	}
	return false
}

// BuildQuery builds the retrieval query of a request: Query if given, else
// Q through the index's query settings, else match-all; with Filter as a
// non-scoring filter. m, the index's mapping, analyses Q's words where
// the query needs it (needsAnalysis); nil: not analysed. Under typo
// tolerance "auto" (the default) the words that take typos are
// typoWords's (by field: UnknownWords); nil: none.
func BuildQuery(req *api.SearchRequest, settings api.QuerySettings, m mapping.IndexMapping, typoWords map[string][]string) (query.Query, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	var q query.Query
	var err error
	switch {
	case len(req.Query) > 0:
		if q, err = parse("query", req.Query); err != nil {
			return nil, err
		}
	case req.Q != "":
		mode, prefix := typosAndPrefix(req, settings)
		var typoFor func(field, word string) bool
		switch mode {
		case api.TyposAll:
			typoFor = func(string, string) bool { return true }
		case api.TyposAuto:
			typoFor = func(field, word string) bool { return slices.Contains(typoWords[field], word) }
		}
		q = textQuery(req.Q, settings, typoFor, prefix, m)
	default:
		q = query.NewMatchAllQuery()
	}
	return withFilter(q, req.Filter)
}

// typosAndPrefix: the typo tolerance req's q gets (api.TyposAuto,
// TyposAll or TyposOff) and whether its last word is also a prefix (the
// request's choice, else the index's settings; a request turning typos on
// where the index has them off gets "auto").
func typosAndPrefix(req *api.SearchRequest, s api.QuerySettings) (typos string, prefix bool) {
	typos, prefix = s.EffectiveTypos(), s.Prefix == "last"
	if req.Typos != nil {
		switch {
		case !*req.Typos:
			typos = api.TyposOff
		case typos == api.TyposOff:
			typos = api.TyposAuto
		}
	}
	if req.Prefix != nil {
		prefix = *req.Prefix
	}
	return typos, prefix
}

// needsAnalysis reports whether req's q becomes a query of one clause a
// word (operator "and" with typos or prefixes), which must leave out the
// words a field's analyser drops.
func needsAnalysis(req *api.SearchRequest, s api.QuerySettings) bool {
	if len(req.Query) > 0 || req.Q == "" || s.Operator != "and" {
		return false
	}
	typos, prefix := typosAndPrefix(req, s)
	return typos != api.TyposOff || prefix
}

// textQuery matches text on every configured field (a disjunction when
// there is more than one clause); with typos, each word long enough may
// also match with its typos (typoQuery); with prefix, the last word, if
// nothing follows it, may also match as the start of a word
// (prefixQuery). With operator "and" and either, every word must match
// (as typed, with its typos, or as a prefix), except a word that m's
// analyser for the field drops (a stop word: "the tofu" is "tofu", as a
// match query with operator "and" makes it; last, it is not a prefix
// either, as with Elasticsearch's match_bool_prefix); with m nil, every
// word.
//
// typoFor says whether a word takes typos on a field (nil: none does).
func textQuery(text string, s api.QuerySettings, typoFor func(field, word string) bool, prefix bool, m mapping.IndexMapping) query.Query {
	typos := typoFor != nil
	fields := s.Fields
	if len(fields) == 0 {
		fields = []api.FieldBoost{{Field: "_all", Boost: 1}}
	}
	var words []string
	if typos || prefix {
		words = typoWords(text)
	}
	last := ""
	if prefix && len(words) > 0 && !unicode.IsSpace(lastRune(text)) {
		last = words[len(words)-1]
	}
	var clauses []query.Query
	for _, f := range fields {
		boost := f.Boost
		if boost == 0 {
			boost = 1
		}
		// _all holds every field's words again: typos and prefixes on it
		// are asked only when it is the one field (typos cost 2.9x a
		// search's p50 on the demo with it, 2.4x without:
		// BenchmarkTypos).
		extra := len(words) > 0 && takesExtras(f, len(fields))
		fuzzy := typos && extra && !f.Exact && slices.ContainsFunc(words, func(w string) bool { return typoFor(f.Field, w) })
		partial := ""
		if extra {
			partial = last
		}
		switch {
		case (fuzzy || partial != "") && s.Operator == "and":
			// Every word, as typed or with its typos; the last one also
			// as a prefix.
			var each []query.Query
			a := fieldAnalyzer(m, f.Field) // looked up once a field
			for i, w := range words {
				if !analyses(a, w) {
					continue // a stop word: not required, even last
				}
				mq := query.NewMatchQuery(w)
				mq.SetField(f.Field)
				mq.SetBoost(boost)
				alts := []query.Query{mq}
				if fq := typoQuery(w, f.Field, boost); fuzzy && fq != nil && typoFor(f.Field, w) {
					alts = append(alts, fq)
				}
				if pq := prefixQuery(partial, f.Field, boost); i == len(words)-1 && pq != nil {
					alts = append(alts, pq)
				}
				each = append(each, query.NewDisjunctionQuery(alts))
			}
			if len(each) == 0 { // every word dropped: nothing to match
				clauses = append(clauses, query.NewMatchNoneQuery())
				break
			}
			clauses = append(clauses, query.NewConjunctionQuery(each))
		default:
			m := query.NewMatchQuery(text)
			m.SetField(f.Field)
			m.SetBoost(boost)
			m.SetFuzziness(s.Fuzziness)
			if s.Operator == "and" {
				m.SetOperator(query.MatchQueryOperatorAnd)
			}
			clauses = append(clauses, m)
			if fuzzy {
				for _, w := range words {
					if fq := typoQuery(w, f.Field, boost); fq != nil && typoFor(f.Field, w) {
						clauses = append(clauses, fq)
					}
				}
			}
			if pq := prefixQuery(partial, f.Field, boost); pq != nil {
				clauses = append(clauses, pq)
			}
		}
		if s.PhraseBoost > 0 {
			ph := query.NewMatchPhraseQuery(text)
			ph.SetField(f.Field)
			ph.SetBoost(boost * s.PhraseBoost)
			clauses = append(clauses, ph)
		}
	}
	if len(clauses) == 1 {
		return clauses[0]
	}
	return query.NewDisjunctionQuery(clauses)
}

// takesExtras reports whether field f, one of n, may take typos and
// prefixes: _all holds every field's words again, so only when it is the
// one field.
func takesExtras(f api.FieldBoost, n int) bool { return f.Field != "_all" || n == 1 }

// TypoCandidates are, by field, the words of req's q that may take typos
// under typo tolerance "auto": long enough (api.TypoEdits), on a field
// that takes them. nil when q takes none that way (no q, a query, typos
// "all" or "off"). The broker keeps those no field holds
// (UnknownWords) and gives them to the plan (Hints.TypoWords).
func TypoCandidates(req *api.SearchRequest, s api.QuerySettings) map[string][]string {
	if len(req.Query) > 0 || req.Q == "" {
		return nil
	}
	if mode, _ := typosAndPrefix(req, s); mode != api.TyposAuto {
		return nil
	}
	fields := s.Fields
	if len(fields) == 0 {
		fields = []api.FieldBoost{{Field: "_all", Boost: 1}}
	}
	var out map[string][]string
	words := typoWords(req.Q)
	for _, f := range fields {
		if f.Exact || !takesExtras(f, len(fields)) {
			continue
		}
		for _, w := range words {
			if api.TypoEdits(w) > 0 {
				if out == nil {
					out = map[string][]string{}
				}
				out[f.Field] = append(out[f.Field], w)
			}
		}
	}
	return out
}

// UnknownWords keeps, of candidates (TypoCandidates), the words the index
// does not hold as typed: those no field of candidates holds, a word
// being held by a field when its terms, analysed as m analyses the field,
// are all in docFreq (field → term → live documents: the statistics of q
// as typed) with a document at least. A word some field holds is a real
// word, taken as meant everywhere (its typos on another field would
// mostly be noise, and cost an automaton a field). nil: every word is
// held.
func UnknownWords(candidates map[string][]string, docFreq map[string]map[string]uint64, m mapping.IndexMapping) map[string][]string {
	held := map[string]bool{}
	for field, words := range candidates {
		a := fieldAnalyzer(m, field)
		if a == nil {
			continue // without its analyser, no word is known held here
		}
		for _, w := range words {
			if held[w] {
				continue // another field holds it: not analysed again
			}
			in := true // a word the analyser drops (a stop word) is no typo
			for _, t := range a.Analyze([]byte(w)) {
				in = in && docFreq[field][string(t.Term)] > 0
			}
			held[w] = in
		}
	}
	var out map[string][]string
	for field, words := range candidates {
		for _, w := range words {
			if !held[w] {
				if out == nil {
					out = map[string][]string{}
				}
				out[field] = append(out[field], w)
			}
		}
	}
	return out
}

// analyses reports whether word leaves a token when a (a field's
// analyser) analyses it (a stop word leaves none); true with a nil.
func analyses(a analysis.Analyzer, word string) bool {
	return a == nil || len(a.Analyze([]byte(word))) > 0
}

// fieldAnalyzer is m's analyser of field (nil with m nil, or for a field
// it has none for).
func fieldAnalyzer(m mapping.IndexMapping, field string) analysis.Analyzer {
	if m == nil {
		return nil
	}
	return m.AnalyzerNamed(m.AnalyzerNameForPath(field))
}

// lastRune is s's last rune (utf8.RuneError for none).
func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// prefixQuery matches the words of field that start with word, at half
// the field's boost; nil for a word shorter than api.PrefixFrom letters
// (a shorter prefix reaches too many of a large index's words).
func prefixQuery(word, field string, boost float64) query.Query {
	if utf8.RuneCountInString(word) < api.PrefixFrom {
		return nil
	}
	pq := query.NewPrefixQuery(word)
	pq.SetField(field)
	pq.SetBoost(boost / 2)
	return pq
}

// typoWords are text's words, lower-cased, each once: runs of letters
// and digits. A word repeated gets one typo or prefix clause, not one a
// repetition (500 of the same word made 1,000 clauses, each a Levenshtein
// automaton on every shard).
func typoWords(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	seen := make(map[string]bool, len(words))
	return slices.DeleteFunc(words, func(w string) bool {
		dup := seen[w]
		seen[w] = true
		return dup
	})
}

// typoQuery matches word on field with the typos its length allows
// (api.TypoOneFrom, api.TypoTwoFrom letters, counted as typed; its first
// letter as typed), at half the field's boost; nil for a word too short
// for any.
func typoQuery(word, field string, boost float64) query.Query {
	edits := api.TypoEdits(word)
	if edits == 0 {
		return nil
	}
	// A match query analyses the word as the field does (a stemmed field
	// holds "noodl" for noodles: "noodels" is "noodel", one edit away),
	// then allows the edits on what it makes.
	fq := query.NewMatchQuery(word)
	fq.SetField(field)
	fq.SetFuzziness(edits)
	fq.SetPrefix(1)
	fq.SetBoost(boost / 2)
	return fq
}

func withFilter(q query.Query, filter json.RawMessage) (query.Query, error) {
	if len(filter) == 0 {
		return q, nil
	}
	f, err := parse("filter", filter)
	if err != nil {
		return nil, err
	}
	bq := query.NewBooleanQuery([]query.Query{q}, nil, nil)
	bq.AddFilter(f)
	return bq, validate("filter", bq)
}

func parse(name string, raw json.RawMessage) (query.Query, error) {
	q, err := query.ParseQuery(raw)
	if err != nil {
		return nil, badQuery(name, err)
	}
	if err := checkKeys(raw, q); err != nil {
		return nil, badQuery(name, err)
	}
	return q, validate(name, q)
}

func validate(name string, q query.Query) error {
	if v, ok := q.(query.ValidatableQuery); ok {
		if err := v.Validate(); err != nil {
			return badQuery(name, err)
		}
	}
	return nil
}

// badQuery is the API's error for the query named name ("query",
// "filter", "hints.query") that bleve could not parse or validate, or
// that holds a key bleve would ignore (an *unknownKeyError): what is
// wrong in the API's words, never a Go type or a pointer.
func badQuery(name string, err error) error {
	return api.BadRequest("%s: %s", name, queryProblem(err))
}

// queryProblem words what err says is wrong with a query.
func queryProblem(err error) string {
	var keyErr *unknownKeyError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &keyErr):
		return fmt.Sprintf("a %s query has no key %q (it has %s)", keyErr.kind, keyErr.key, strings.Join(keyErr.keys, ", "))
	case strings.Contains(err.Error(), "match operator"):
		// bleve's message shows a pointer, not the value
		return `a match query's operator must be "or" or "and"`
	case errors.As(err, &typeErr) || errors.As(err, &syntaxErr):
		// encoding/json's words name Go types (query.Boost,
		// map[string]interface {}): say it in the API's.
		return strictjson.Describe(err)
	case strings.Contains(err.Error(), "error found in #"):
		// a geo shape's GeoJSON, read by jsoniter, whose words
		// ("readObjectStart: expect { or n") are its own
		return "a geo shape's geometry is not valid GeoJSON"
	}
	// bleve's Validate names its Go type here; the rest is the CIDR
	// quoted.
	if cidr, ok := strings.CutPrefix(err.Error(), "IPRangeQuery must be for a network or ip address, "); ok {
		return fmt.Sprintf("an ip range query's cidr %s is not a network or an IP address", cidr)
	}
	return err.Error()
}

// Timeout is a request's whole budget, from when the broker took it: its
// timeout_ms, at most the max timeout, or the default timeout. The
// rewriters run within it too.
func (p *Planner) Timeout(req *api.SearchRequest) time.Duration {
	if req.TimeoutMS > 0 {
		return min(time.Duration(req.TimeoutMS)*time.Millisecond, p.cfg.MaxTimeout)
	}
	return p.cfg.DefaultTimeout
}

// PointInTime is the point in time a plan reads: its id on each shard's
// replica that holds it (every request of the search goes there, not to
// any replica of the shard) and how long to keep it after the search.
type PointInTime struct {
	ID        string         `json:"id"`
	KeepAlive time.Duration  `json:"keep_alive"`
	Replicas  map[int]string `json:"replicas"`
}
