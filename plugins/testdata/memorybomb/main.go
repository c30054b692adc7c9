// Command memorybomb is a hostile test plugin: every call allocates until
// memory runs out.
package main

import "github.com/quarrysearch/quarry/sdk"

var hoard [][]byte

func init() {
	sdk.Rewriter(func(*sdk.RewriteRequest) error {
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	})
}

func main() {}
