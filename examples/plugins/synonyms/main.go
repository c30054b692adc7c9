// Command synonyms is a Quarry rewriter plugin: it adds synonyms from its
// configuration to the user's text, so "pop" also finds "soda". The logic
// is package lib/synonyms; this is its WebAssembly build.
//
// Configuration:
//
//	{"synonyms": {"pop": ["soda"], "chips": ["fries"]}}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o synonyms.wasm .
package main

import (
	"github.com/quarrysearch/quarry/examples/plugins/lib/synonyms"
	"github.com/quarrysearch/quarry/sdk"
)

// expander is made from the configuration on the first call.
var expander *synonyms.Expander

// Rewrite appends the synonyms of every word of q that has some.
func Rewrite(r *sdk.RewriteRequest) error {
	if expander == nil {
		e, err := synonyms.New(sdk.Config())
		if err != nil {
			return err
		}
		expander = e
	}
	return expander.Rewrite(r)
}

func init() { sdk.Rewriter(Rewrite) }

func main() {}
