// Command ltr is a learning-to-rank Quarry ranker: a linear model whose
// weights come from its configuration, over features from the candidates'
// stored fields and their retrieval score:
//
//	score' = bias + w_score·score + Σ w_f · feature_f
//
// The logic is package lib/ltr; this is its WebAssembly build.
//
// Configuration:
//
//	{"bias": 0, "weights": {"_score": 1.0, "rating": 0.3, "rating_count": 0.001, "price": -0.02}}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o ltr.wasm .
package main

import (
	"github.com/quarrysearch/quarry/examples/plugins/lib/ltr"
	"github.com/quarrysearch/quarry/sdk"
)

// model is made from the configuration on the first call.
var model *ltr.Model

// Rank scores every candidate with the linear model.
func Rank(b *sdk.Batch) error {
	if model == nil {
		m, err := ltr.New(sdk.Config())
		if err != nil {
			return err
		}
		model = m
	}
	return model.Rank(b)
}

func init() { sdk.BatchRanker(Rank) }

func main() {}
