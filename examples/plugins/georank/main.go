// Command georank is a Quarry ranker plugin for a food-delivery catalogue:
// it boosts items that are open now, nearby and highly rated, using the
// request's context ({"lat": 51.5, "lon": -0.12, "hour": 20}) and the
// items' stored fields (location, open_hour, close_hour, rating). The logic
// is package lib/georank; this is its WebAssembly build.
//
// Configuration (all optional):
//
//	{"open_boost": 1.0, "distance_km": 5, "rating_weight": 0.2}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o georank.wasm .
package main

import (
	"github.com/quarrysearch/quarry/examples/plugins/lib/georank"
	"github.com/quarrysearch/quarry/sdk"
)

// ranker is made from the configuration on the first call.
var ranker *georank.Ranker

// Rank multiplies each candidate's score by its business boosts.
func Rank(r *sdk.RankRequest) error {
	if ranker == nil {
		g, err := georank.New(sdk.Config())
		if err != nil {
			return err
		}
		ranker = g
	}
	return ranker.Rank(r)
}

func init() { sdk.Ranker(Rank) }

func main() {}
