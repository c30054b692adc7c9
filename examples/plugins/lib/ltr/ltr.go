// Package ltr is the logic of the ltr ranker plugin (examples/plugins/ltr,
// its WebAssembly build): a linear learning-to-rank model whose weights come
// from its configuration, over features from the candidates' stored fields
// and their retrieval score:
//
//	score' = bias + w_score·score + Σ w_f · feature_f
//
// Configuration:
//
//	{"bias": 0, "weights": {"_score": 1.0, "rating": 0.3, "rating_count": 0.001, "price": -0.02}}
//
// The logic is a library so that the same code also runs natively, next to
// its WebAssembly build (Hooks, for plugins.LoadNative and `quarry bench`).
package ltr

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/quarrysearch/quarry/sdk"
)

// Config is the plugin's configuration. A feature named "_score" is the
// retrieval score (weight 1 unless given).
type Config struct {
	Bias    float64            `json:"bias"`
	Weights map[string]float64 `json:"weights"`
}

type weight struct {
	feature string
	w       float64
}

// Model is a linear model. It is read only once made, so calls may run
// concurrently.
type Model struct {
	bias        float64
	scoreWeight float64
	weights     []weight // stored-field features, sorted: the sum's order, and so its result, never varies
}

// New makes a Model from a configuration (JSON; empty: the retrieval
// score alone).
func New(config []byte) (*Model, error) {
	c := Config{Weights: map[string]float64{"_score": 1}}
	if len(config) > 0 {
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, fmt.Errorf("ltr configuration: %w", err)
		}
	}
	m := &Model{bias: c.Bias}
	for f, w := range c.Weights {
		if f == "_score" {
			m.scoreWeight = w
			continue
		}
		m.weights = append(m.weights, weight{f, w})
	}
	sort.Slice(m.weights, func(i, j int) bool { return m.weights[i].feature < m.weights[j].feature })
	return m, nil
}

// Rank scores every candidate with the model, a feature column at a time
// (the batch form of a ranker: no per-candidate objects, the numeric
// fields read in place).
func (m *Model) Rank(b *sdk.Batch) error {
	for i, s := range b.Scores {
		b.Scores[i] = m.bias + m.scoreWeight*s
	}
	for _, w := range m.weights {
		for i, v := range b.Numbers(w.feature) {
			if v == v { // NaN: the candidate has no value
				b.Scores[i] += w.w * v
			}
		}
	}
	return nil
}

// Hooks returns the ranker's hooks for a configuration, with their own
// state: one per instance of the plugin run natively.
func Hooks(config []byte) (*sdk.Hooks, error) {
	m, err := New(config)
	if err != nil {
		return nil, err
	}
	return &sdk.Hooks{BatchRank: m.Rank}, nil
}
