// Command boost is a benchmark plugin: score + 0.3 × rating, the same
// logic as testdata/ltr.wat and the C and AssemblyScript example rankers
// configured with {"field": "rating", "weight": 0.3}, on the Go SDK's
// batch form.
package main

import "github.com/quarrysearch/quarry/sdk"

func init() {
	sdk.BatchRanker(func(b *sdk.Batch) error {
		for i, v := range b.Numbers("rating") {
			if v == v {
				b.Scores[i] += 0.3 * v
			}
		}
		return nil
	})
}

func main() {}
