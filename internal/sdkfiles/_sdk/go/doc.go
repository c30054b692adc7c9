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
//
// In WebAssembly, Go's allocator and collector are several times slower
// than natively, and a plugin's time counts against its budget: a hook
// that allocates nothing per candidate or per word runs several times
// faster (the demo's spelling rewriter builds its edits in reused
// buffers; georank reads each location with Candidate.AppendNumbersOf
// into one buffer), and reflection is slower still: ContextNumber reads
// a member of the request's context without it (json.Unmarshal of a
// small context cost a ranker of 50 candidates more than its own work).
// A rank request's strings alias the request and are valid during the
// call only; the SDK's own call costs about 1.6 µs.
package sdk
