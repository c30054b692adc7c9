// Command panicinit is a hostile test plugin: it panics while initializing.
package main

import "github.com/quarrysearch/quarry/sdk"

func init() {
	sdk.Rewriter(func(*sdk.RewriteRequest) error { return nil })
	panic("hostile plugin: panic in init")
}

func main() {}
