package api

import (
	"encoding/json"
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
}

// StepSpec is one plugin step of a pipeline.
type StepSpec struct {
	Plugin string `json:"plugin"`
	// Digest names the plugin binary in the quarry-plugins object store:
	// "sha256:<hex>".
	Digest      string          `json:"digest"`
	Config      json.RawMessage `json:"config,omitempty"`
	BudgetMS    int             `json:"budget_ms,omitempty"`
	Policy      string          `json:"policy,omitempty"`
	Fields      []string        `json:"fields,omitempty"`
	RerankDepth int             `json:"rerank_depth,omitempty"`
	Instances   int             `json:"instances,omitempty"`
	// Canary sends a share of queries to a candidate version of this
	// plugin.
	Canary *CanarySpec `json:"canary,omitempty"`
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
}

// PluginVersion is a pushed plugin binary and what validation said of it.
type PluginVersion struct {
	Index  string `json:"index"`
	Name   string `json:"name"`
	Kind   string `json:"kind"` // rewriter or ranker
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Step holds the settings the plugin is activated with.
	Step   StepSpec  `json:"step"`
	Pushed time.Time `json:"pushed"`
	// Valid is true when every check passed; Error names the one that
	// failed.
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
}
