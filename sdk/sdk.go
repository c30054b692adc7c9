package sdk

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// RewriteRequest is a search request on its way to the planner. A rewriter
// changes the fields it wants to; what it leaves alone goes on unchanged.
type RewriteRequest struct {
	// Q is the user's raw text.
	Q string
	// Query and Filter are bleve queries in JSON (empty when absent).
	Query  []byte
	Filter []byte
	// Context is the request's free-form context object, JSON (read only).
	Context []byte
	// Size and From are the requested page (read only).
	Size, From int
	// RerankDepth asks every shard for this many candidates, for a ranker
	// later in the pipeline.
	RerankDepth int
}

// RankRequest holds the merged candidates of a search. A ranker sets their
// scores and may reorder or drop them (Candidates is what it leaves).
type RankRequest struct {
	// Q is the (rewritten) text of the search.
	Q string
	// Context is the request's free-form context object, JSON.
	Context []byte
	// Candidates are the merged hits, best first.
	Candidates []*Candidate
	// KeepOrder: when false (the default), candidates are sorted by Score
	// (highest first, stable) after the ranker returns; when true, the
	// order of Candidates is the result.
	KeepOrder bool

	fields map[string]int
}

// Candidate is one hit with its stored fields.
type Candidate struct {
	ID    string
	Score float64

	index  uint32
	values []abi.Value
	req    *RankRequest
}

func (c *Candidate) value(field string) *abi.Value {
	i, ok := c.req.fields[field]
	if !ok || i >= len(c.values) {
		return nil
	}
	return &c.values[i]
}

// Number returns a numeric field (the first, for a list).
func (c *Candidate) Number(field string) (float64, bool) {
	v := c.value(field)
	for v != nil && v.Kind == abi.KindList && len(v.List) > 0 {
		v = &v.List[0]
	}
	if v == nil || v.Kind != abi.KindNumber {
		return 0, false
	}
	return v.Num, true
}

// String returns a text field (the first, for a list).
func (c *Candidate) String(field string) (string, bool) {
	v := c.value(field)
	for v != nil && v.Kind == abi.KindList && len(v.List) > 0 {
		v = &v.List[0]
	}
	if v == nil || v.Kind != abi.KindString {
		return "", false
	}
	return v.Str, true
}

// Strings returns every text value of a field.
func (c *Candidate) Strings(field string) []string {
	v := c.value(field)
	if v == nil {
		return nil
	}
	if v.Kind == abi.KindString {
		return []string{v.Str}
	}
	var out []string
	for _, e := range v.List {
		if e.Kind == abi.KindString {
			out = append(out, e.Str)
		}
	}
	return out
}

// Numbers returns every numeric value of a field (a geopoint is [lon, lat]).
func (c *Candidate) Numbers(field string) []float64 {
	v := c.value(field)
	if v == nil {
		return nil
	}
	if v.Kind == abi.KindNumber {
		return []float64{v.Num}
	}
	var out []float64
	for _, e := range v.List {
		if e.Kind == abi.KindNumber {
			out = append(out, e.Num)
		}
	}
	return out
}

// Bool returns a boolean field.
func (c *Candidate) Bool(field string) (bool, bool) {
	v := c.value(field)
	if v == nil || v.Kind != abi.KindBool {
		return false, false
	}
	return v.Bool, true
}

var (
	rewriter func(*RewriteRequest) error
	ranker   func(*RankRequest) error
)

// Rewriter registers the plugin's rewrite hook. Call it from init.
func Rewriter(fn func(*RewriteRequest) error) { rewriter = fn }

// Ranker registers the plugin's rank hook. Call it from init.
func Ranker(fn func(*RankRequest) error) { ranker = fn }

// HandleRewrite runs the registered rewriter on an encoded request and
// appends the encoded response to out. It is what the wasm export calls;
// sdktest calls it natively.
func HandleRewrite(in, out []byte) []byte {
	var req abi.RewriteRequest
	if err := abi.DecodeRewriteRequest(in, &req); err != nil {
		return abi.AppendError(out, "decode rewrite request: "+err.Error())
	}
	if rewriter == nil {
		return abi.AppendError(out, "this plugin has no rewriter (call sdk.Rewriter in init)")
	}
	r := RewriteRequest{Q: req.Q, Query: req.Query, Filter: req.Filter, Context: req.Context, Size: int(req.Size), From: int(req.From)}
	if err := call(func() error { return rewriter(&r) }); err != nil {
		return abi.AppendError(out, err.Error())
	}
	var resp abi.RewriteResponse
	if r.Q != req.Q {
		resp.Flags |= abi.FlagQ
		resp.Q = r.Q
	}
	if !bytes.Equal(r.Query, req.Query) {
		resp.Flags |= abi.FlagQuery
		resp.Query = r.Query
	}
	if !bytes.Equal(r.Filter, req.Filter) {
		resp.Flags |= abi.FlagFilter
		resp.Filter = r.Filter
	}
	if r.RerankDepth > 0 {
		resp.Flags |= abi.FlagRerankDepth
		resp.RerankDepth = uint32(r.RerankDepth)
	}
	return abi.AppendRewriteResponse(out, &resp)
}

// HandleRank runs the registered ranker on an encoded request and appends
// the encoded response to out.
func HandleRank(in, out []byte) []byte {
	var req abi.RankRequest
	if err := abi.DecodeRankRequest(in, &req); err != nil {
		return abi.AppendError(out, "decode rank request: "+err.Error())
	}
	if ranker == nil {
		return abi.AppendError(out, "this plugin has no ranker (call sdk.Ranker in init)")
	}
	r := RankRequest{Q: req.Q, Context: req.Context, fields: make(map[string]int, len(req.Fields))}
	for i, f := range req.Fields {
		r.fields[f] = i
	}
	cands := make([]Candidate, len(req.Candidates))
	r.Candidates = make([]*Candidate, len(cands))
	for i := range cands {
		c := &req.Candidates[i]
		cands[i] = Candidate{ID: c.ID, Score: c.Score, index: uint32(i), values: c.Values, req: &r}
		r.Candidates[i] = &cands[i]
	}
	if err := call(func() error { return ranker(&r) }); err != nil {
		return abi.AppendError(out, err.Error())
	}
	if !r.KeepOrder {
		slices.SortStableFunc(r.Candidates, func(a, b *Candidate) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
	}
	resp := abi.RankResponse{Ranked: make([]abi.Ranked, 0, len(r.Candidates))}
	seen := make([]bool, len(cands))
	for _, c := range r.Candidates {
		if c == nil || c.req != &r || seen[c.index] {
			return abi.AppendError(out, "ranker returned a candidate twice, or one it was not given")
		}
		seen[c.index] = true
		resp.Ranked = append(resp.Ranked, abi.Ranked{Index: c.index, Score: c.Score})
	}
	return abi.AppendRankResponse(out, &resp)
}

// call runs a hook, turning a panic into an error.
func call(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plugin panicked: %v", p)
		}
	}()
	return f()
}
