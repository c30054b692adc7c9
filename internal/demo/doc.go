// Package demo holds what `quarry serve --demo` runs, inside the binary so
// that it needs no source tree at run time: the demo index's plugin
// pipeline (examples/pipelines/menu.json) with its plugins built to
// WebAssembly from examples/plugins and embedded, compressed, under
// plugins/. The catalogue itself comes from internal/catalog.
//
// The embedded modules are generated: after changing an example plugin,
// the SDK or the demo pipeline, run
//
//	go generate ./internal/demo
//
// TestEmbeddedCurrent rebuilds them from source and fails when they are
// not what the source builds to.
package demo

//go:generate go test -run TestEmbeddedCurrent -update .
