package plugins

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Kind is a plugin's hook: the api's word for it.
type Kind = api.StepKind

// Plugin kinds.
const (
	Rewriter = api.Rewriter
	Ranker   = api.Ranker
)

// SpecOf is the Spec a pipeline step runs its plugin with: the step's
// plugin name, config, budget and pool size, of kind; version names the
// build in logs, errors and metrics (a digest's short form, "native").
func SpecOf(kind Kind, version string, s api.StepSpec) Spec {
	return Spec{Name: s.Plugin, Version: version, Kind: kind, Config: s.Config,
		Budget: time.Duration(s.BudgetMS) * time.Millisecond, Instances: s.Instances}
}

// The requests a plugin gets are made here, and only here: by the broker
// for live searches, by the registry when it validates a version, and by
// `quarry plugin run`, so a version is validated and tried on exactly what
// production sends it.

// RewriteInput is a rewriter's request for req: its text, query, filter
// and context as the caller gave them (absent ones empty), the page size
// as the search will use it (api.SearchRequest.EffectiveSize) and the
// offset.
func RewriteInput(req *api.SearchRequest) abi.RewriteRequest {
	return abi.RewriteRequest{Q: req.Q, Query: req.Query, Filter: req.Filter, Context: req.Context,
		Size: uint32(req.EffectiveSize()), From: uint32(req.From)}
}

// RankInput is a ranker's request over hits (in their order, which the
// request's candidate indexes refer to): q after the rewriters, the
// search's context, and for each hit its score and the values of fields.
func RankInput(q string, context []byte, hits []api.Hit, fields []string) *abi.RankRequest {
	req := &abi.RankRequest{Q: q, Context: context, Fields: fields, Candidates: make([]abi.Candidate, len(hits))}
	values := make([]any, len(fields))
	for i := range hits {
		h := &hits[i]
		c := &req.Candidates[i]
		c.ID, c.Score = h.ID, h.Score
		c.Values = make([]abi.Value, len(fields))
		if len(fields) == 0 {
			continue
		}
		h.ValuesOf(fields, values)
		for j, v := range values {
			c.Values[j] = ValueOf(v)
		}
	}
	return req
}

// CheckRewrite reports what makes a rewriter's answer unusable whatever
// the request: a q that is not valid UTF-8, a query or a filter that is
// not JSON. The broker skips (or, fail-closed, fails on) such an answer,
// so the plugin's fault is not the caller's bad request, and the registry
// refuses a version that gives one for a sample, so a version is
// validated as production judges it.
func CheckRewrite(out *abi.RewriteResponse) error {
	if out.Flags&abi.FlagQ != 0 && !utf8.ValidString(out.Q) {
		return errors.New("rewritten q is not valid UTF-8")
	}
	if out.Flags&abi.FlagQuery != 0 && len(out.Query) > 0 && !json.Valid(out.Query) {
		return errors.New("rewritten query is not JSON")
	}
	if out.Flags&abi.FlagFilter != 0 && len(out.Filter) > 0 && !json.Valid(out.Filter) {
		return errors.New("rewritten filter is not JSON")
	}
	return nil
}
