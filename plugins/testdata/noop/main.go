// Command noop is a benchmark plugin: a rewriter and ranker that change
// nothing, to measure the cost of a call itself.
package main

import "github.com/quarrysearch/quarry/sdk"

func init() {
	sdk.Rewriter(func(*sdk.RewriteRequest) error { return nil })
	sdk.Ranker(func(r *sdk.RankRequest) error { r.KeepOrder = true; return nil })
}

func main() {}
