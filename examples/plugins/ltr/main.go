// Command ltr is a learning-to-rank Quarry ranker: a linear model whose
// weights come from its configuration, over features from the candidates'
// stored fields and their retrieval score:
//
//	score' = bias + w_score·score + Σ w_f · feature_f
//
// Configuration:
//
//	{"bias": 0, "weights": {"_score": 1.0, "rating": 0.3, "rating_count": 0.001, "price": -0.02}}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o ltr.wasm .
package main

import (
	"encoding/json"
	"sort"

	"github.com/quarrysearch/quarry/sdk"
)

type model struct {
	Bias    float64            `json:"bias"`
	Weights map[string]float64 `json:"weights"`
}

type weight struct {
	feature string
	w       float64
}

var (
	loaded      bool
	bias        float64
	scoreWeight float64
	weights     []weight // stored-field features, sorted: the sum's order, and so its result, never varies
)

func load() error {
	if loaded {
		return nil
	}
	mm := model{Weights: map[string]float64{"_score": 1}}
	if b := sdk.Config(); len(b) > 0 {
		if err := json.Unmarshal(b, &mm); err != nil {
			return err
		}
	}
	bias = mm.Bias
	for f, w := range mm.Weights {
		if f == "_score" {
			scoreWeight = w
			continue
		}
		weights = append(weights, weight{f, w})
	}
	sort.Slice(weights, func(i, j int) bool { return weights[i].feature < weights[j].feature })
	loaded = true
	return nil
}

// Rank scores every candidate with the linear model, a feature column at a
// time (the batch form of a ranker: no per-candidate objects, the numeric
// fields read in place).
func Rank(b *sdk.Batch) error {
	if err := load(); err != nil {
		return err
	}
	for i, s := range b.Scores {
		b.Scores[i] = bias + scoreWeight*s
	}
	for _, w := range weights {
		for i, v := range b.Numbers(w.feature) {
			if v == v { // NaN: the candidate has no value
				b.Scores[i] += w.w * v
			}
		}
	}
	return nil
}

func init() { sdk.BatchRanker(Rank) }

func main() {}
