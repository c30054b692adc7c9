// Command spelling is a Quarry rewriter plugin: it corrects each word of
// the user's text to the nearest word of a vocabulary in its configuration
// (one edit away: a letter inserted, deleted, changed or two swapped). The
// logic is package lib/spelling; this is its WebAssembly build.
//
// Configuration:
//
//	{"vocabulary": ["noodles", "spicy", "burger", "pizza"]}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o spelling.wasm .
package main

import (
	"github.com/quarrysearch/quarry/examples/plugins/lib/spelling"
	"github.com/quarrysearch/quarry/sdk"
)

// speller is made from the configuration on the first call.
var speller *spelling.Speller

// Rewrite corrects every misspelt word of q.
func Rewrite(r *sdk.RewriteRequest) error {
	if speller == nil {
		s, err := spelling.New(sdk.Config())
		if err != nil {
			return err
		}
		speller = s
	}
	return speller.Rewrite(r)
}

func init() { sdk.Rewriter(Rewrite) }

func main() {}
