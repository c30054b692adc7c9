package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api/jsonenc"
	"github.com/quarrysearch/quarry/api/strictjson"
)

// Defaults and limits of the public API.
const (
	// DefaultSize is the number of hits returned when a request gives none.
	DefaultSize = 10
	// MaxWindow caps from+size: deeper pagination costs every shard.
	MaxWindow = 10000
	// DefaultMaxDocBytes is the largest document accepted by default.
	DefaultMaxDocBytes = 1 << 20
	// MaxShards caps the shards of one index.
	MaxShards = 256
	// MaxReplicas caps the JetStream replicas of Quarry's streams (as
	// JetStream does).
	MaxReplicas = 5
)

// SearchRequest is a query against one index.
type SearchRequest struct {
	// Q is the user's raw text. It is matched against the index's default
	// field unless Query is given.
	Q string `json:"q,omitempty"`
	// Query is a bleve query in its JSON form, for callers who know what
	// they want. It takes precedence over Q.
	Query json.RawMessage `json:"query,omitempty"`
	// Filter is a bleve query in JSON form every hit must also match; it
	// does not change scores.
	Filter json.RawMessage `json:"filter,omitempty"`
	// Size is the number of hits to return. In JSON, an absent size means
	// DefaultSize (10) and "size": 0 means no hits (only the total and
	// facets); in Go, 0 means DefaultSize and NoHits means none.
	Size int `json:"size,omitempty"`
	// From skips that many hits, for pagination.
	From int `json:"from,omitempty"`
	// Sort orders hits by fields ("-price" for descending, "_score", "_id")
	// instead of by score. A sorted request is in its sort's order: the
	// index's rankers do not reorder it.
	Sort []string `json:"sort,omitempty"`
	// Fields lists the stored fields to return with each hit ("*" for all).
	Fields []string `json:"fields,omitempty"`
	// Facets asks for term facets, by name.
	Facets map[string]FacetRequest `json:"facets,omitempty"`
	// Context is free-form data for plugins (user, locale, location…).
	Context json.RawMessage `json:"context,omitempty"`
	// TimeoutMS bounds the whole request; 0 means the broker's default.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// AllowPartial, when false, turns any shard failure into an error.
	// Nil means true.
	AllowPartial *bool `json:"allow_partial,omitempty"`
	// Profile asks for the plan and a timing per stage in the response.
	Profile bool `json:"profile,omitempty"`
	// Scoring is how shards score hits: ScoringExact (the default: with
	// the index's global term statistics, gathered first, so a document's
	// score does not depend on the shard count) or ScoringShard (each
	// shard with its own statistics: one round trip fewer, scores that
	// differ across shards, as Elasticsearch's query_then_fetch).
	Scoring string `json:"scoring,omitempty"`
	// Explain asks for each hit's Explanation: how its retrieval score
	// was computed (bleve's explanation, with the index-wide statistics
	// Quarry scores with).
	Explain bool `json:"explain,omitempty"`
	// Highlight asks for each hit's best fragment of each of its fields,
	// the query's terms marked (Hit.Highlight).
	Highlight *HighlightRequest `json:"highlight,omitempty"`
	// Typos, when set, turns typo tolerance on or off for this request's
	// q, whatever the index's query settings say (QuerySettings.Typos).
	Typos *bool `json:"typos,omitempty"`
	// Prefix, when set, turns search as you type on or off for this
	// request's q (QuerySettings.Prefix).
	Prefix *bool `json:"prefix,omitempty"`
	// SearchAfter continues a sorted search after the last hit of the
	// page whose response gave it (SearchResponse.Next): deep paging with
	// no window, one page at a time. It needs the same Sort (and query)
	// as that page, and From 0.
	SearchAfter string `json:"search_after,omitempty"`
	// PIT reads a point in time: the index's documents as of one moment,
	// held so that the pages of a cursor walk (SearchAfter) read the same
	// documents whatever is written meanwhile. Without an id it opens one
	// (SearchResponse.PIT names it); with one it reads it, keeping it for
	// its keep-alive again.
	PIT *PITRequest `json:"pit,omitempty"`
	// Suggest asks for the index's words that complete the last word of
	// q (SearchResponse.Suggestions): search as you type's list of
	// completions, beside the search.
	Suggest *SuggestRequest `json:"suggest,omitempty"`
	// Variant runs a pushed, validated version of one of the index's live
	// plugins in place of the live version, for this request only: what
	// `quarry plugin test` replays recorded queries with.
	Variant *Variant `json:"variant,omitempty"`
}

// HighlightRequest asks for fragments of stored text fields with the
// query's terms marked: for each hit and field, the field's best
// fragment (about 200 bytes around the most matched terms).
type HighlightRequest struct {
	// Fields are the stored text fields to highlight (1 to
	// MaxHighlightFields).
	Fields []string `json:"fields"`
	// PreTag and PostTag go around each matched term (default "<mark>"
	// and "</mark>"), at most 64 bytes each.
	PreTag  string `json:"pre_tag,omitempty"`
	PostTag string `json:"post_tag,omitempty"`
	// Encoder is how the field's own text is written: "html" (the
	// default: HTML-escaped, so a fragment can go into a page as it is,
	// the tags being the only markup) or "none" (as stored).
	Encoder string `json:"encoder,omitempty"`
}

// MaxCursorBytes bounds a search_after cursor.
const MaxCursorBytes = 4096

// Highlighting's bounds: the fields of one request, and the hits each
// shard highlights (from + size), each a stored document read and
// fragmented.
const (
	MaxHighlightFields = 16
	MaxHighlightHits   = 1000
	maxHighlightTag    = 64
)

// The values of HighlightRequest.Encoder.
const (
	EncoderHTML = "html"
	EncoderNone = "none"
)

// Tags returns the pre and post tags, defaults filled in.
func (h *HighlightRequest) Tags() (pre, post string) {
	if h.PreTag == "" && h.PostTag == "" {
		return "<mark>", "</mark>"
	}
	return h.PreTag, h.PostTag
}

// validate checks a highlight request against from + size hits.
func (h *HighlightRequest) validate(hits int) error {
	switch {
	case len(h.Fields) == 0 || len(h.Fields) > MaxHighlightFields:
		return BadRequest("highlight.fields: name 1 to %d stored text fields, got %d", MaxHighlightFields, len(h.Fields))
	case len(h.PreTag) > maxHighlightTag || len(h.PostTag) > maxHighlightTag:
		return BadRequest("highlight: pre_tag and post_tag are at most %d bytes each", maxHighlightTag)
	case h.Encoder != "" && h.Encoder != EncoderHTML && h.Encoder != EncoderNone:
		return BadRequest("highlight.encoder must be %q or %q, got %q", EncoderHTML, EncoderNone, h.Encoder)
	case hits > MaxHighlightHits:
		return Errorf(CodeQueryTooComplex, "highlight: from + size is %d, over the %d hits a search highlights (each a stored document read and fragmented on every shard): page through fewer", hits, MaxHighlightHits)
	}
	for i, f := range h.Fields {
		if f == "" {
			return BadRequest("highlight.fields[%d] is empty", i)
		}
		if at := invalidUTF8(f); at >= 0 {
			return BadRequest("highlight.fields[%d] is not valid UTF-8 (byte %d)", i, at)
		}
	}
	if at := invalidUTF8(h.PreTag + h.PostTag); at >= 0 {
		return BadRequest("highlight: pre_tag or post_tag is not valid UTF-8")
	}
	return nil
}

// Variant names a plugin version to use for one request, or a whole
// candidate pipeline.
type Variant struct {
	Plugin string `json:"plugin,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Pipeline, in place of Plugin and Digest, runs this pipeline instead
	// of the live one: every step must name a pushed, validated version of
	// the index's plugins, which runs with the settings it was pushed with
	// (`quarry eval --pipeline`).
	Pipeline *PipelineSpec `json:"pipeline,omitempty"`
}

// FacetRequest asks for the top Size terms of Field; or, with Ranges or
// Interval, for the documents whose number in Field falls in each range;
// or, with DateRanges or CalendarInterval, whose date does.
type FacetRequest struct {
	Field string `json:"field"`
	Size  int    `json:"size,omitempty"`
	// Ranges counts the documents whose numeric Field is in each range
	// (From inclusive, To exclusive, either open), in place of terms: a
	// range facet, its counts in the order of Ranges.
	Ranges []FacetRange `json:"ranges,omitempty"`
	// Interval, with Min and Max, makes Ranges a histogram's: buckets of
	// this width from Min until Max, each named by its From.
	Interval float64  `json:"interval,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	// DateRanges counts the documents whose date in Field is in each
	// range (From inclusive, To exclusive, either open): a date range
	// facet, its counts in the order of DateRanges.
	DateRanges []DateRange `json:"date_ranges,omitempty"`
	// CalendarInterval, with Start and End, makes DateRanges a date
	// histogram's: buckets of one calendar hour, day, week (from Monday),
	// month or year in UTC, the first the one Start is in, until End;
	// each named by its start (RFC 3339). See CalendarIntervals.
	CalendarInterval string `json:"calendar_interval,omitempty"`
	Start            string `json:"start,omitempty"`
	End              string `json:"end,omitempty"`
}

// FacetRange is one range of a range facet: [From, To), either open.
// Name names its count (default: "From-To", an open end empty).
type FacetRange struct {
	Name string   `json:"name,omitempty"`
	From *float64 `json:"from,omitempty"`
	To   *float64 `json:"to,omitempty"`
}

// MaxFacetRanges bounds the ranges (or histogram buckets) of one facet.
const MaxFacetRanges = 100

// EffectiveRanges are a range facet's ranges, each named, a histogram's
// made from its interval; nil for a term facet. Call it on a request
// Validate accepted.
func (f *FacetRequest) EffectiveRanges() []FacetRange {
	if f.Interval > 0 && f.Min != nil && f.Max != nil {
		var out []FacetRange
		for i := 0; i < MaxFacetRanges; i++ {
			from := *f.Min + float64(i)*f.Interval
			if from >= *f.Max {
				break
			}
			to := min(*f.Min+float64(i+1)*f.Interval, *f.Max)
			out = append(out, FacetRange{Name: strconv.FormatFloat(from, 'g', -1, 64), From: &from, To: &to})
		}
		return out
	}
	if len(f.Ranges) == 0 {
		return nil
	}
	out := make([]FacetRange, len(f.Ranges))
	for i, r := range f.Ranges {
		if r.Name == "" {
			end := func(v *float64) string {
				if v == nil {
					return ""
				}
				return strconv.FormatFloat(*v, 'g', -1, 64)
			}
			r.Name = end(r.From) + "-" + end(r.To)
		}
		out[i] = r
	}
	return out
}

// validate checks a facet named name.
func (f *FacetRequest) validate(name string) error {
	switch {
	case f.Field == "":
		return BadRequest("facet %q: field is required", name)
	case f.Size < 0:
		return BadRequest("facet %q: size must be >= 0", name)
	case f.Interval < 0 || math.IsNaN(f.Interval) || math.IsInf(f.Interval, 0):
		return BadRequest("facet %q: interval must be a positive number", name)
	case f.Interval > 0 && len(f.Ranges) > 0:
		return BadRequest("facet %q: give ranges or an interval, not both", name)
	case f.Interval == 0 && (f.Min != nil || f.Max != nil):
		return BadRequest("facet %q: min and max go with an interval", name)
	case len(f.Ranges) > MaxFacetRanges:
		return BadRequest("facet %q: %d ranges, over the limit of %d", name, len(f.Ranges), MaxFacetRanges)
	}
	if f.Interval > 0 {
		if f.Min == nil || f.Max == nil || !(*f.Min < *f.Max) || math.IsInf(*f.Min, 0) || math.IsInf(*f.Max, 0) {
			return BadRequest("facet %q: a histogram needs min < max (finite numbers) with its interval", name)
		}
		if n := (*f.Max - *f.Min) / f.Interval; n > MaxFacetRanges {
			return BadRequest("facet %q: %.0f buckets of %g from %g to %g, over the limit of %d: widen the interval", name, math.Ceil(n), f.Interval, *f.Min, *f.Max, MaxFacetRanges)
		}
	}
	if err := f.validateDates(name); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, r := range f.EffectiveRanges() {
		if r.From == nil && r.To == nil {
			return BadRequest("facet %q: range %d has neither from nor to", name, i)
		}
		if r.From != nil && r.To != nil && !(*r.From < *r.To) {
			return BadRequest("facet %q: range %d: from (%g) must be below to (%g)", name, i, *r.From, *r.To)
		}
		if seen[r.Name] {
			return BadRequest("facet %q: two ranges named %q", name, r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}

// NoHits as a SearchRequest's Size asks for the total and facets only
// ("size": 0 in JSON).
const NoHits = -1

// searchRequestSchema is what a search request's JSON may hold, from its
// json tags, made once.
var searchRequestSchema = strictjson.For(reflect.TypeFor[SearchRequest]())

// UnmarshalJSON decodes a request as the JSON API defines it, strictly
// (strictjson): one JSON object, valid UTF-8 throughout, every key known,
// spelled exactly and given once, every value of its field's type, and
// no key twice in query, filter or context either; an explicit "size": 0
// is NoHits. Errors are CodeBadRequest errors naming the field, or
// CodeQueryTooComplex for a request no index allows (a query or filter
// nested deeper than MaxLimits.MaxDepth, a q longer than
// MaxLimits.MaxQBytes), refused before it is decoded.
func (r *SearchRequest) UnmarshalJSON(b []byte) error {
	q, err := strictjson.CheckLimited(b, searchRequestSchema, maxRequestDepth, "q")
	if err != nil {
		if e, ok := err.(*strictjson.Error); ok && e.TooDeep() {
			return Errorf(CodeQueryTooComplex, "query too complex: the request nests deeper than %d levels at byte %d; no index allows a query or filter deeper than %d (query.limits.max_depth)", maxRequestDepth, e.Offset, MaxLimits.MaxDepth)
		}
		return BadRequest("malformed search request: %v", err)
	}
	if n, exact := qBytes(q); n > MaxLimits.MaxQBytes {
		what := "q's length in bytes is"
		if !exact {
			what = "q's length in bytes is at least"
		}
		return Errorf(CodeQueryTooComplex, "query too complex: %s %d; no index allows more than %d (query.limits.max_q_bytes)", what, n, MaxLimits.MaxQBytes)
	}
	type plain SearchRequest // without this method
	aux := struct {
		*plain
		Size *int `json:"size,omitempty"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return BadRequest("malformed search request: %s", strictjson.Describe(err))
	}
	if aux.Size != nil {
		switch r.Size = *aux.Size; {
		case r.Size == 0:
			r.Size = NoHits
		case r.Size < 0:
			return BadRequest("size must be >= 0, got %d", r.Size)
		}
	}
	return nil
}

// maxRequestDepth is the deepest a search request may nest: its query or
// filter as deep as any index allows (MaxLimits.MaxDepth) inside the
// request's object. Deeper, the request is refused where the scan meets
// it, before anything is decoded: a bleve query nested 4,900 levels deep
// cost the broker 4 ms to decode in full before the index's limit
// refused it (docs/performance.md, "Buffers that are reused, and which
// heavy request hurts").
var maxRequestDepth = MaxLimits.MaxDepth + 1

// qBytes is how long the JSON string raw (q as sent, quotes included) is
// once decoded, without decoding it: exactly when it holds no escape,
// else at least a sixth of its bytes (\u0041 is one byte). A q longer
// than any index allows is refused on this, before a megabyte of it is
// decoded (7.9 ms of the broker's time, for nothing).
func qBytes(raw []byte) (n int, exact bool) {
	if len(raw) < 2 {
		return 0, true
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return len(body), true
	}
	return len(body) / 6, false
}

// MarshalJSON encodes a request as the JSON API defines it: NoHits is
// "size": 0, and a zero Size (the default) is left out. A request with
// invalid UTF-8 in a string is refused (a CodeBadRequest error):
// encoding/json would replace it with U+FFFD, a different request.
func (r SearchRequest) MarshalJSON() ([]byte, error) {
	if err := r.checkText(); err != nil {
		return nil, err
	}
	type plain SearchRequest // without this method
	aux := struct {
		plain
		Size *int `json:"size,omitempty"`
	}{plain: plain(r)}
	switch size := r.Size; size {
	case 0:
	case NoHits:
		size = 0
		aux.Size = &size
	default:
		aux.Size = &size
	}
	return json.Marshal(aux)
}

// checkText refuses invalid UTF-8 in a request's strings, naming the
// field. A request decoded from JSON had it refused already; one built in
// Go is checked here.
func (r *SearchRequest) checkText() error {
	bad := func(field string, at int) error {
		return BadRequest("%s is not valid UTF-8 (byte %d)", field, at)
	}
	if at := invalidUTF8(r.Q); at >= 0 {
		return bad("q", at)
	}
	for i, raw := range [...]json.RawMessage{r.Query, r.Filter, r.Context} {
		if !utf8.Valid(raw) {
			return bad([...]string{"query", "filter", "context"}[i], invalidUTF8(string(raw)))
		}
	}
	for i, s := range r.Sort {
		if at := invalidUTF8(s); at >= 0 {
			return bad(fmt.Sprintf("sort[%d]", i), at)
		}
	}
	for i, s := range r.Fields {
		if at := invalidUTF8(s); at >= 0 {
			return bad(fmt.Sprintf("fields[%d]", i), at)
		}
	}
	for name, f := range r.Facets {
		if at := invalidUTF8(name); at >= 0 {
			return bad(fmt.Sprintf("the name of facet %q", name), at)
		}
		if at := invalidUTF8(f.Field); at >= 0 {
			return bad(fmt.Sprintf("facets.%s.field", name), at)
		}
	}
	if v := r.Variant; v != nil {
		if at := invalidUTF8(v.Plugin); at >= 0 {
			return bad("variant.plugin", at)
		}
		if at := invalidUTF8(v.Digest); at >= 0 {
			return bad("variant.digest", at)
		}
	}
	return nil
}

// Validate checks a request for errors a caller can fix, naming the field.
func (r *SearchRequest) Validate() error {
	switch {
	case r.Size < NoHits:
		return BadRequest("size must be >= 0, got %d", r.Size)
	case r.From < 0:
		return BadRequest("from must be >= 0, got %d", r.From)
	case r.TimeoutMS < 0:
		return BadRequest("timeout_ms must be >= 0, got %d", r.TimeoutMS)
	case r.Scoring != "" && r.Scoring != ScoringExact && r.Scoring != ScoringShard:
		return BadRequest("scoring must be %q or %q, got %q", ScoringExact, ScoringShard, r.Scoring)
	}
	if r.Highlight != nil {
		if err := r.Highlight.validate(r.From + r.EffectiveSize()); err != nil {
			return err
		}
	}
	if r.PIT != nil {
		if err := r.PIT.validate(); err != nil {
			return err
		}
	}
	if r.SearchAfter != "" {
		switch {
		case len(r.Sort) == 0:
			return BadRequest("search_after continues a sorted search: give the sort of the page whose next it is")
		case r.From != 0:
			return BadRequest("search_after takes no from (got %d): the cursor says where the page starts", r.From)
		case len(r.SearchAfter) > MaxCursorBytes:
			return BadRequest("search_after is %d bytes, over the limit of %d", len(r.SearchAfter), MaxCursorBytes)
		}
	}
	for name, f := range r.Facets {
		if err := f.validate(name); err != nil {
			return err
		}
	}
	if r.Suggest != nil {
		if err := r.Suggest.validate(r.Q, len(r.Query) > 0); err != nil {
			return err
		}
	}
	return r.checkText()
}

// The values of SearchRequest.Scoring.
const (
	// ScoringExact scores with the index's global term statistics.
	ScoringExact = "exact"
	// ScoringShard scores on each shard with its own statistics.
	ScoringShard = "shard"
)

// EffectiveSize is Size with the default applied.
func (r *SearchRequest) EffectiveSize() int {
	switch r.Size {
	case 0:
		return DefaultSize
	case NoHits:
		return 0
	}
	return r.Size
}

// PartialAllowed reports whether shard failures may be tolerated.
func (r *SearchRequest) PartialAllowed() bool {
	return r.AllowPartial == nil || *r.AllowPartial
}

// SearchResponse is the answer to a SearchRequest.
type SearchResponse struct {
	Hits   []Hit                  `json:"hits"`
	Total  uint64                 `json:"total"`
	Facets map[string]FacetResult `json:"facets,omitempty"`
	// Suggestions are the words that complete the last word of q, most
	// documents first, when the request asked for them (Suggest).
	Suggestions []TermCount `json:"suggestions,omitempty"`
	Shards      ShardsInfo  `json:"shards"`
	TookMS      float64     `json:"took_ms"`
	// Next, on a full page of a sorted search (which rankers do not
	// reorder), is the cursor of its last hit: the next page is the same
	// request with SearchAfter set to it.
	Next string `json:"next,omitempty"`
	// PIT names the point in time the search read (SearchRequest.PIT):
	// the next page's request gives it back.
	PIT string `json:"pit,omitempty"`
	// Index, on a search of an alias, is the index that answered.
	Index string `json:"index,omitempty"`
	// Pipeline reports plugin steps that failed and were skipped
	// (fail-open); empty when every step ran.
	Pipeline []StepReport `json:"pipeline,omitempty"`
	// Profile is present when the request asked for it.
	Profile *Profile `json:"profile,omitempty"`
	// RequestID names the request in every service's logs and traces:
	// the caller's (NATS header Quarry-Request-Id, HTTP X-Request-Id) or
	// one the broker made.
	RequestID string `json:"request_id,omitempty"`
	// QueryID names this search, unique (the broker makes it): what user
	// events about its results carry (api.UserEvent.QueryID).
	QueryID string `json:"query_id,omitempty"`
	// PipelineRevision is the registry revision of the index's pipeline
	// the search ran (quarry pipeline show; the broker swaps each in
	// whole), or of its removal when it has none any more (the revisions
	// of every index count up together); 0, and left out, when the
	// index's name never had one, or for a replay or evaluation (a
	// variant).
	PipelineRevision uint64 `json:"pipeline_revision,omitempty"`
}

// IDs returns the ids of the response's first k hits (all of them when
// it has fewer), in order: what rankings are compared on.
func (r *SearchResponse) IDs(k int) []string {
	ids := make([]string, min(k, len(r.Hits)))
	for i := range ids {
		ids[i] = r.Hits[i].ID
	}
	return ids
}

// StepReport says what happened to one plugin step of the pipeline.
type StepReport struct {
	Plugin string   `json:"plugin"`
	Kind   StepKind `json:"kind"`
	Status string   `json:"status"` // "skipped"
	Error  string   `json:"error,omitempty"`
}

// Hit is one matching document.
type Hit struct {
	ID     string         `json:"id"`
	Score  float64        `json:"score"`
	Fields map[string]any `json:"fields,omitempty"`
	// Explanation, when the request asked to explain, is how the shard
	// computed the hit's retrieval score, as a tree of {"value",
	// "message", "children"} (bleve's search.Explanation); a ranker may
	// have changed Score since.
	Explanation json.RawMessage `json:"explanation,omitempty"`
	// Highlight, when the request asked for it, is each highlighted
	// field's best fragment with the query's terms marked (a field
	// without a match is absent).
	Highlight map[string][]string `json:"highlight,omitempty"`
	// Sort holds, when the request sorts, the hit's value of each sort
	// key, typed: a float64 for a number, an RFC 3339 string for a date, a
	// string for text (the indexed term), a bool for a boolean field, a
	// {"lat", "lon"} object for a geopoint, nil when the hit has no value;
	// "_score" for _score and the id for _id.
	Sort []any `json:"sort,omitempty"`
	// SortKeys are bleve's encoded sort values, which compare correctly
	// across shards: what shards send and the broker merges by, then
	// decodes into Sort for the page it returns. Not part of the JSON API.
	SortKeys []string `json:"-"`
	// FieldsJSON is Fields as a JSON object, as shards send them: the
	// broker carries a hit's fields so to the response, where they are
	// copied, neither decoded into a map nor encoded again. When set, it
	// is what the hit's "fields" are, Fields being nil (FieldValues reads
	// either). Not part of the JSON API: a decoded response has Fields.
	FieldsJSON json.RawMessage `json:"-"`
}

// FieldValues returns the hit's stored fields: Fields, or FieldsJSON
// decoded (nil if it does not decode).
func (h *Hit) FieldValues() map[string]any {
	if h.Fields != nil || len(h.FieldsJSON) == 0 {
		return h.Fields
	}
	var m map[string]any
	if json.Unmarshal(h.FieldsJSON, &m) != nil {
		return nil
	}
	return m
}

// ValuesOf puts the hit's stored value of each of names in values (nil
// for a field it has not), decoding from FieldsJSON only those: what a
// ranker reads of a candidate.
func (h *Hit) ValuesOf(names []string, values []any) {
	clear(values[:len(names)])
	if h.Fields != nil || len(h.FieldsJSON) == 0 {
		for i, n := range names {
			values[i] = h.Fields[n]
		}
		return
	}
	if jsonenc.Members(h.FieldsJSON, names, values) != nil {
		clear(values[:len(names)]) // not an object: no fields, as FieldValues
	}
}

// DecodeFields makes Fields of FieldsJSON, for code that changes them.
func (h *Hit) DecodeFields() {
	if len(h.FieldsJSON) > 0 {
		h.Fields, h.FieldsJSON = h.FieldValues(), nil
	}
}

// AppendJSON appends the hit's JSON form to b, exactly as encoding/json
// would write it from the struct's tags, with FieldsJSON copied as its
// "fields" when Fields is nil.
func (h *Hit) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, h.ID)
	b = append(b, `,"score":`...)
	b, err := jsonenc.AppendFloat(b, h.Score)
	if err != nil {
		return b, fmt.Errorf("hit %q score: %w", h.ID, err)
	}
	switch {
	case len(h.Fields) > 0:
		b = append(b, `,"fields":`...)
		if b, err = jsonenc.AppendValue(b, h.Fields); err != nil {
			return b, fmt.Errorf("hit %q fields: %w", h.ID, err)
		}
	case h.Fields == nil && len(h.FieldsJSON) > 2: // not {}
		b = append(b, `,"fields":`...)
		b = append(b, h.FieldsJSON...)
	}
	if len(h.Explanation) > 0 {
		b = append(b, `,"explanation":`...)
		b = append(b, h.Explanation...)
	}
	if len(h.Highlight) > 0 {
		b = append(b, `,"highlight":`...)
		// The tags as they are (<mark>, not \u003cmark\u003e): a
		// fragment is markup, meant to be read and put in a page.
		buf := bytes.NewBuffer(b)
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(h.Highlight); err != nil {
			return b, fmt.Errorf("hit %q highlight: %w", h.ID, err)
		}
		b = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	if len(h.Sort) > 0 {
		b = append(b, `,"sort":`...)
		if b, err = jsonenc.AppendValue(b, h.Sort); err != nil {
			return b, fmt.Errorf("hit %q sort values: %w", h.ID, err)
		}
	}
	return append(b, '}'), nil
}

// MarshalJSON is AppendJSON's.
func (h Hit) MarshalJSON() ([]byte, error) { return h.AppendJSON(nil) }

// FacetResult is a merged term facet.
type FacetResult struct {
	Field   string      `json:"field"`
	Total   int         `json:"total"`
	Missing int         `json:"missing"`
	Other   int         `json:"other"`
	Terms   []TermCount `json:"terms,omitempty"`
	// Ranges are a range facet's counts, in the order it asked for them.
	Ranges []RangeCount `json:"ranges,omitempty"`
}

// RangeCount is one range of a range facet and its document count.
type RangeCount struct {
	Name string   `json:"name"`
	From *float64 `json:"from,omitempty"`
	To   *float64 `json:"to,omitempty"`
	// FromDate and ToDate are a date range's bounds (RFC 3339, UTC).
	FromDate string `json:"from_date,omitempty"`
	ToDate   string `json:"to_date,omitempty"`
	Count    int    `json:"count"`
}

// TermCount is one term of a facet and its document count.
type TermCount struct {
	Term  string `json:"term"`
	Count int    `json:"count"`
}

// ShardsInfo reports how many shards answered.
type ShardsInfo struct {
	Total      int            `json:"total"`
	Successful int            `json:"successful"`
	Failed     int            `json:"failed"`
	Failures   []ShardFailure `json:"failures,omitempty"`
}

// ShardFailure names a shard that did not answer and why.
type ShardFailure struct {
	Shard  int    `json:"shard"`
	Reason string `json:"reason"`
}

// Profile is the timing of one request, per stage.
type Profile struct {
	Stages []Stage `json:"stages"`
}

// Stage is one timed step of a request.
type Stage struct {
	Name   string  `json:"name"`
	TookMS float64 `json:"took_ms"`
	Detail string  `json:"detail,omitempty"`
}

// IndexDefinition describes an index: its shard count, bleve mapping and
// how a user's text becomes a query.
type IndexDefinition struct {
	Name   string `json:"name"`
	Shards int    `json:"shards"`
	// Team owns the index. A team's plugins run in a plugin runtime of
	// their own, with its own instance and memory limits; empty: the index
	// is a team of its own. NATS permissions on the admin API decide who
	// may act for a team (docs/teams.md).
	Team string `json:"team,omitempty"`
	// Mapping is a bleve index mapping in JSON; empty means Quarry's default.
	Mapping json.RawMessage `json:"mapping,omitempty"`
	// Query says how `q` becomes a retrieval query. It can be changed on a
	// live index; brokers pick the change up without a restart.
	Query QuerySettings `json:"query"`
	// Documents bound what one document may cost the index; zero fields
	// take the defaults of DefaultDocumentLimits. They are set when the
	// index is created.
	Documents DocumentLimits `json:"documents,omitzero"`
	Created   time.Time      `json:"created"`
}

// MappingChange asks to change an index's mapping in place (the control
// API's index.mapping; PUT /v1/indexes/{index}/mapping takes the mapping
// alone): the whole new mapping, which may only add to the index's
// fields, types and analysis components, and only fields no document of
// the index holds yet. Any other change takes a reindex into a new index.
type MappingChange struct {
	Index   string          `json:"index"`
	Mapping json.RawMessage `json:"mapping"`
}

// Alias is a name that points at one index: searches, reads and writes
// of the alias are the index's. Switching it to another index is atomic
// (one key's compare-and-set): a search or write gets the old index or
// the new one, never neither, and brokers and clients follow the switch
// within moments of it (their watch of the aliases). An alias and an index never share a name; an
// alias points at an index, never at another alias; an index an alias
// points at cannot be deleted until the alias is switched or removed.
type Alias struct {
	Name  string `json:"name"`
	Index string `json:"index"`
	// Team is the team of the index it points at (TeamOf): whose tokens
	// may use the alias. A switch keeps it: the new index is of the same
	// team (or both of none).
	Team    string    `json:"team"`
	Updated time.Time `json:"updated"`
}

// TeamOf returns the team an index's plugins run under: its Team, or
// "index-<name>" for an index with none.
func (d *IndexDefinition) TeamOf() string {
	if d.Team != "" {
		return d.Team
	}
	return "index-" + d.Name
}

// QuerySettings turn a request's raw text into a query.
type QuerySettings struct {
	// Fields are matched, each with its boost (default: "_all", boost 1).
	Fields []FieldBoost `json:"fields,omitempty"`
	// Operator is "or" (any word, the default) or "and" (every word).
	Operator string `json:"operator,omitempty"`
	// Fuzziness is the edit distance allowed per word, 0 to 2. Fuzzy
	// expansion is per shard, so fuzzy scores are not exact across shards.
	Fuzziness int `json:"fuzziness,omitempty"`
	// PhraseBoost, when > 0, adds the whole text as a phrase on every
	// field, with the field's boost times PhraseBoost.
	PhraseBoost float64 `json:"phrase_boost,omitempty"`
	// Typos is typo tolerance on q, on by default: a word of TypoOneFrom
	// letters or more may match with one typo, one of TypoTwoFrom or more
	// with two (Meilisearch's rule; the first letter must be right).
	// "auto" (or empty, the default) gives typos to the words no field
	// holds as typed: a word the index has is taken as meant, and
	// costs nothing more (the broker reads which from the statistics of
	// q as typed). "all" gives them to every word, as Meilisearch does;
	// "off" to none. A word found as typed scores above its near-misses:
	// the typo's match is added to the exact one, at half the field's
	// boost. Fields marked Exact never take typos, nor _all unless it is
	// the only field; a request may turn it on or off
	// (SearchRequest.Typos). Fuzziness, a fixed edit distance for every
	// word, is the older form: set, it turns the default off, and the two
	// do not go together.
	Typos string `json:"typos,omitempty"`
	// Prefix is "last" for search as you type: the last word of q, when
	// nothing follows it (no space), also matches the words that start
	// with it, from PrefixFrom letters, at half the field's boost (a
	// word typed whole still ranks first). "off" or empty: none. A
	// request may turn it on or off (SearchRequest.Prefix). _all takes
	// it only when it is the only field.
	Prefix string `json:"prefix,omitempty"`
	// Limits bound what one search of the index may cost; zero fields
	// take the defaults of DefaultLimits.
	Limits QueryLimits `json:"limits,omitzero"`
}

// QueryLimits bound the cost of one search, so that one team's heavy
// query cannot slow everyone's: a request over a limit is refused at once
// with CodeQueryTooComplex (HTTP 400), naming the limit and the value.
// Zero means the default (DefaultLimits); each has a ceiling
// (MaxLimits).
type QueryLimits struct {
	// MaxQBytes caps the length of q, in bytes (default 4096).
	MaxQBytes int `json:"max_q_bytes,omitempty"`
	// MaxQueryBytes caps query and filter, JSON, in bytes each (default
	// 65536).
	MaxQueryBytes int `json:"max_query_bytes,omitempty"`
	// MaxDepth caps how deeply the JSON of query and filter nests objects
	// and arrays (default 32: a boolean query about 15 levels deep).
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxClauses caps the clauses of the query tree, after a query
	// string is parsed (default 1024).
	MaxClauses int `json:"max_clauses,omitempty"`
	// MaxTerms caps the terms a search reads on one shard, after analysis
	// and after fuzzy, prefix, wildcard, regexp and numeric range queries
	// expand (default 4096; bleve's own term-searcher limit enforces it on
	// every shard).
	MaxTerms int `json:"max_terms,omitempty"`
	// MaxWindow caps from+size, and a ranker's rerank depth (default and
	// ceiling MaxWindow).
	MaxWindow int `json:"max_window,omitempty"`
	// MaxFacets caps the facets of one request (default 16); MaxFacetSize
	// the size of each (default 1000).
	MaxFacets    int `json:"max_facets,omitempty"`
	MaxFacetSize int `json:"max_facet_size,omitempty"`
	// MaxSort caps the keys of sort (default 16). Each key is read for
	// every matching document: 40,000 of them held a shard for seconds,
	// past the request's deadline.
	MaxSort int `json:"max_sort,omitempty"`
	// MaxFields caps the names in fields ("*" is one) (default 256).
	MaxFields int `json:"max_fields,omitempty"`
}

// DefaultLimits are the limits of an index that sets none.
var DefaultLimits = QueryLimits{MaxQBytes: 4096, MaxQueryBytes: 64 << 10, MaxDepth: 32, MaxClauses: 1024, MaxTerms: 4096,
	MaxWindow: MaxWindow, MaxFacets: 16, MaxFacetSize: 1000, MaxSort: 16, MaxFields: 256}

// MaxLimits are the highest limits an index may set.
var MaxLimits = QueryLimits{MaxQBytes: 64 << 10, MaxQueryBytes: 1 << 20, MaxDepth: 128, MaxClauses: 16384, MaxTerms: 65536,
	MaxWindow: MaxWindow, MaxFacets: 64, MaxFacetSize: 10000, MaxSort: 64, MaxFields: 4096}

// limitFields lists the limits with their JSON names, for checks and
// messages written once.
func (l *QueryLimits) limitFields() []struct {
	name string
	v    *int
} {
	return []struct {
		name string
		v    *int
	}{{"max_q_bytes", &l.MaxQBytes}, {"max_query_bytes", &l.MaxQueryBytes}, {"max_depth", &l.MaxDepth}, {"max_clauses", &l.MaxClauses},
		{"max_terms", &l.MaxTerms}, {"max_window", &l.MaxWindow}, {"max_facets", &l.MaxFacets}, {"max_facet_size", &l.MaxFacetSize},
		{"max_sort", &l.MaxSort}, {"max_fields", &l.MaxFields}}
}

// Effective returns the limits with every zero field set to its default.
// It does not allocate: it runs for every search.
func (l QueryLimits) Effective() QueryLimits {
	d := &DefaultLimits
	return QueryLimits{MaxQBytes: cmp.Or(l.MaxQBytes, d.MaxQBytes), MaxQueryBytes: cmp.Or(l.MaxQueryBytes, d.MaxQueryBytes),
		MaxDepth: cmp.Or(l.MaxDepth, d.MaxDepth), MaxClauses: cmp.Or(l.MaxClauses, d.MaxClauses), MaxTerms: cmp.Or(l.MaxTerms, d.MaxTerms),
		MaxWindow: cmp.Or(l.MaxWindow, d.MaxWindow), MaxFacets: cmp.Or(l.MaxFacets, d.MaxFacets), MaxFacetSize: cmp.Or(l.MaxFacetSize, d.MaxFacetSize),
		MaxSort: cmp.Or(l.MaxSort, d.MaxSort), MaxFields: cmp.Or(l.MaxFields, d.MaxFields)}
}

// Validate checks that every limit is between 0 (the default) and its
// ceiling.
func (l *QueryLimits) Validate() error {
	ceil := MaxLimits
	got, top := l.limitFields(), ceil.limitFields()
	for i := range got {
		if v := *got[i].v; v < 0 || v > *top[i].v {
			return BadRequest("query.limits.%s must be between 0 (the default) and %d, got %d", got[i].name, *top[i].v, v)
		}
	}
	return nil
}

// TooComplex makes the CodeQueryTooComplex error for a value over the
// index's limit name (a QueryLimits JSON name).
func TooComplex(what string, value int, name string, limit int) *Error {
	return &Error{Code: CodeQueryTooComplex, Message: fmt.Sprintf("query too complex: %s is %d, over the index's limit of %d (query.limits.%s)", what, value, limit, name)}
}

// ResponseTooLarge makes the CodeResponseTooLarge error of a reply that
// cannot be sent: what says what is too large and by how much ("the
// response is 9000000 bytes, over the 8384512 bytes one reply carries").
func ResponseTooLarge(what string) *Error {
	return &Error{Code: CodeResponseTooLarge, Message: "response too large: " + what + " (the NATS server's max_payload); ask for fewer hits (size) or fewer fields"}
}

// FieldBoost is a field and its weight.
type FieldBoost struct {
	Field string  `json:"field"`
	Boost float64 `json:"boost,omitempty"`
	// Exact keeps typo tolerance off this field (a keyword, a code).
	Exact bool `json:"exact,omitempty"`
}

// QuerySettings.Typos's modes.
const (
	TyposAuto = "auto"
	TyposAll  = "all"
	TyposOff  = "off"
)

// EffectiveTypos is Typos with its default: TyposAuto, or TyposOff when
// Fuzziness is set.
func (s *QuerySettings) EffectiveTypos() string {
	switch {
	case s.Typos != "":
		return s.Typos
	case s.Fuzziness > 0:
		return TyposOff
	}
	return TyposAuto
}

// Typo tolerance's word lengths, in letters (QuerySettings.Typos): a
// word this long may have one typo, or two.
const (
	TypoOneFrom = 5
	TypoTwoFrom = 9
)

// TypoMaxLetters is the longest word that may have typos. A word's typos
// are a Levenshtein automaton over each field's terms, built per word:
// 88 ms on one shard for a word of 1,001 letters, and one of 4,001 failed
// the search ("dfa contains more than 10000 states"); the longest words
// of natural languages are well under it.
const TypoMaxLetters = 64

// TypoEdits is how many typos word may have: 2 from TypoTwoFrom letters,
// 1 from TypoOneFrom, else 0; none over TypoMaxLetters.
func TypoEdits(word string) int {
	switch n := utf8.RuneCountInString(word); {
	case n > TypoMaxLetters:
		return 0
	case n >= TypoTwoFrom:
		return 2
	case n >= TypoOneFrom:
		return 1
	}
	return 0
}

// PrefixFrom is the fewest letters of a last word that search as you
// type (QuerySettings.Prefix) completes: a shorter prefix reaches too
// many of a large index's words (query.limits.max_terms).
const PrefixFrom = 3

// Validate checks the settings, naming what is wrong.
func (s *QuerySettings) Validate() error {
	for i, f := range s.Fields {
		if f.Field == "" {
			return BadRequest("query.fields[%d]: field is required", i)
		}
		if at := invalidUTF8(f.Field); at >= 0 {
			return BadRequest("query.fields[%d].field is not valid UTF-8 (byte %d)", i, at)
		}
		if f.Boost < 0 {
			return BadRequest("query.fields[%d]: boost must be >= 0, got %g", i, f.Boost)
		}
	}
	switch s.Operator {
	case "", "or", "and":
	default:
		return BadRequest(`query.operator must be "or" or "and", got %q`, s.Operator)
	}
	if s.Fuzziness < 0 || s.Fuzziness > 2 {
		return BadRequest("query.fuzziness must be 0, 1 or 2, got %d", s.Fuzziness)
	}
	switch s.Typos {
	case "", TyposOff, TyposAuto, TyposAll:
	default:
		return BadRequest(`query.typos must be "auto", "all" or "off", got %q`, s.Typos)
	}
	switch s.Prefix {
	case "", "off", "last":
	default:
		return BadRequest(`query.prefix must be "last" or "off", got %q`, s.Prefix)
	}
	if s.Typos != "" && s.Typos != TyposOff && s.Fuzziness > 0 {
		return BadRequest(`query.typos %q and query.fuzziness %d do not go together: typos chooses each word's edit distance by its length; set fuzziness to 0`, s.Typos, s.Fuzziness)
	}
	if s.PhraseBoost < 0 {
		return BadRequest("query.phrase_boost must be >= 0, got %g", s.PhraseBoost)
	}
	return s.Limits.Validate()
}

// Code classifies an Error so callers can branch on it.
type Code string

// Error codes.
const (
	CodeBadRequest Code = "bad_request"
	CodeNotFound   Code = "not_found"
	CodeConflict   Code = "conflict"
	// CodeUnauthorized: the HTTP API needs a token and got none, or an
	// unknown one (HTTP 401).
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: the caller's NATS credentials or HTTP token do not
	// allow it (a team acting on another team's index).
	CodeForbidden   Code = "forbidden"
	CodeUnavailable Code = "unavailable"
	CodeOverloaded  Code = "overloaded"
	CodeTimeout     Code = "timeout"
	CodeInternal    Code = "internal"
	// CodeQueryTooComplex: the request is over one of the index's cost
	// limits (QueryLimits); the message names it. HTTP 400.
	CodeQueryTooComplex Code = "query_too_complex"
	// CodeResponseTooLarge: the hits' fields, or the whole response, come
	// to more bytes than one reply carries (the NATS server's
	// max_payload); the message gives both. Ask for fewer hits or fields.
	// HTTP 400.
	CodeResponseTooLarge Code = "response_too_large"
	// CodeDocumentTooComplex: a document is over one of its index's
	// document limits (DocumentLimits); the message names the limit, the
	// value and the document's id. Nothing of it is stored. HTTP 400.
	CodeDocumentTooComplex Code = "document_too_complex"
	// CodeGateFailed: a plugin version did not pass the index's relevance
	// gate, so it was not put live; Error.Gate has the figures. HTTP 412.
	CodeGateFailed Code = "gate_failed"
	// CodeGateRunning: the index's relevance gate is still running on
	// the change (plugin.activate, plugin.promote, pipeline.set) when the
	// request stops waiting for it (the registry's GateWait); it goes on
	// in the background, and the change goes live by itself if it passes
	// (docs/relevance.md, "A gate over a large list"). Error.Running has
	// its progress. HTTP 202 Accepted.
	CodeGateRunning Code = "gate_running"
	// CodeInsufficientStorage: the server holds writes because the disk
	// of its data directory is (nearly) full (quarry serve
	// --min-free-disk); the message names the directory and the space
	// left. Nothing was stored; writes resume by themselves once space is
	// freed. HTTP 507.
	CodeInsufficientStorage Code = "insufficient_storage"
)

// Error is an API error with a code. errors.Is matches two Errors with the
// same code, so errors.Is(err, api.ErrNotFound) works on any not-found error.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfterMS, on an overloaded error, is how long to wait before
	// trying again (HTTP: the Retry-After header, in whole seconds).
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
	// Gate, on a gate_failed error, is what the gate found.
	Gate *GateResult `json:"gate,omitempty"`
	// Running, on a gate_running error, is the gate's progress when the
	// request answered: what client.WaitGate waits for.
	Running *GateProgress `json:"running,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrBadRequest  = &Error{Code: CodeBadRequest, Message: "bad request"}
	ErrNotFound    = &Error{Code: CodeNotFound, Message: "not found"}
	ErrConflict    = &Error{Code: CodeConflict, Message: "conflict"}
	ErrForbidden   = &Error{Code: CodeForbidden, Message: "forbidden"}
	ErrUnavailable = &Error{Code: CodeUnavailable, Message: "unavailable"}
	ErrOverloaded  = &Error{Code: CodeOverloaded, Message: "overloaded"}
	ErrTimeout     = &Error{Code: CodeTimeout, Message: "timeout"}
	// ErrQueryTooComplex matches any CodeQueryTooComplex error.
	ErrQueryTooComplex = &Error{Code: CodeQueryTooComplex, Message: "query too complex"}
	// ErrResponseTooLarge matches any CodeResponseTooLarge error.
	ErrResponseTooLarge = &Error{Code: CodeResponseTooLarge, Message: "response too large"}
	// ErrGateFailed matches any CodeGateFailed error.
	ErrGateFailed = &Error{Code: CodeGateFailed, Message: "gate failed"}
	// ErrGateRunning matches any CodeGateRunning error.
	ErrGateRunning = &Error{Code: CodeGateRunning, Message: "gate running"}
	// ErrInsufficientStorage matches any CodeInsufficientStorage error.
	ErrInsufficientStorage = &Error{Code: CodeInsufficientStorage, Message: "insufficient storage"}
	// ErrDocumentTooComplex matches any CodeDocumentTooComplex error.
	ErrDocumentTooComplex = &Error{Code: CodeDocumentTooComplex, Message: "document too complex"}
)

// BadRequest makes a CodeBadRequest error.
func BadRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// NotFound makes a CodeNotFound error.
func NotFound(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Errorf makes an error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err, CodeInternal if it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// HTTPStatus maps a code to an HTTP status.
func HTTPStatus(c Code) int {
	switch c {
	case CodeBadRequest, CodeQueryTooComplex, CodeResponseTooLarge, CodeDocumentTooComplex:
		return 400
	case CodeNotFound:
		return 404
	case CodeUnauthorized:
		return 401
	case CodeForbidden:
		return 403
	case CodeConflict:
		return 409
	case CodeGateFailed:
		return 412
	case CodeGateRunning:
		return 202
	case CodeOverloaded:
		return 429
	case CodeUnavailable:
		return 503
	case CodeTimeout:
		return 504
	case CodeInsufficientStorage:
		return 507
	}
	return 500
}

// CheckReplicas refuses a JetStream replica count outside 1 to MaxReplicas.
func CheckReplicas(n int) error {
	if n < 1 || n > MaxReplicas {
		return BadRequest("replicas must be 1 to %d, got %d", MaxReplicas, n)
	}
	return nil
}

// PITRequest is SearchRequest.PIT.
type PITRequest struct {
	// ID is a point in time a response named (SearchResponse.PIT); empty
	// opens one.
	ID string `json:"id,omitempty"`
	// KeepAlive is how long the point in time is held after this search,
	// a Go duration ("1m", "30s"): DefaultPITKeepAlive when empty, at most
	// MaxPITKeepAlive.
	KeepAlive string `json:"keep_alive,omitempty"`
	// Close ends the point in time once this search has read it: a
	// walk's last page gives its segments back at once rather than at
	// its keep-alive's end. The response then names none.
	Close bool `json:"close,omitempty"`
}

// Bounds of a point in time: each holds the segments merged away since it
// opened, on every shard (a searcher holds at most --max-points-in-time a
// shard).
const (
	DefaultPITKeepAlive = time.Minute
	MaxPITKeepAlive     = time.Hour
	// MaxPITBytes bounds a point in time's id.
	MaxPITBytes = 4096
)

// KeepAliveDuration is the keep-alive asked for (validated).
func (p *PITRequest) KeepAliveDuration() time.Duration {
	if p.KeepAlive == "" {
		return DefaultPITKeepAlive
	}
	d, _ := time.ParseDuration(p.KeepAlive)
	return d
}

func (p *PITRequest) validate() error {
	if p.Close && p.ID == "" {
		return BadRequest("pit.close ends a point in time: give its id")
	}
	if len(p.ID) > MaxPITBytes {
		return BadRequest("pit.id is %d bytes, over the limit of %d", len(p.ID), MaxPITBytes)
	}
	if p.KeepAlive == "" {
		return nil
	}
	d, err := time.ParseDuration(p.KeepAlive)
	switch {
	case err != nil:
		return BadRequest("pit.keep_alive %q is no duration (\"1m\", \"30s\")", p.KeepAlive)
	case d <= 0 || d > MaxPITKeepAlive:
		return BadRequest("pit.keep_alive %s is out of range: more than 0 and at most %s", p.KeepAlive, MaxPITKeepAlive)
	}
	return nil
}
