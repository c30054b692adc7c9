// Package sdk is what a Quarry plugin author imports. A plugin is a Go
// program built to WebAssembly that registers its hooks in init:
//
//	package main
//
//	import "github.com/quarrysearch/quarry/sdk"
//
//	func init() {
//		sdk.Rewriter(func(r *sdk.RewriteRequest) error {
//			r.Q = strings.ReplaceAll(r.Q, "pop", "soda")
//			return nil
//		})
//	}
//
//	func main() {}
//
// built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// The ABI's raw exports and imports live inside this package (see package
// abi and docs/plugin-abi.md); on other platforms the package builds with
// stubs, so plugins unit-test natively with package sdktest.
//
// Plugins run with no file system, network, environment or real clock:
// time and randomness are virtual and seeded, so the same input always
// gives the same output. Config returns the plugin's own configuration and
// Log writes to the broker's log.
package sdk
