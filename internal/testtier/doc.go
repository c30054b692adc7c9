// Package testtier says which test tier a test binary was built for.
//
// Quarry's tests come in two tiers. The fast tier is the default
// (`go test ./...`): Go alone, a few minutes, run after every change. The
// long tier is built with the tag long (`go test -tags long ./...`) and
// adds what needs real processes, clusters, a browser, other toolchains,
// corpus scale or a quiet machine; its tests live in files named
// *_long_test.go that begin with
//
//	//go:build long
//
// A test with a soak variant (more documents, more queries, more seeds, a
// stricter latency bound: what used to be -quarry.long) asks Soak, built
// with -tags long,soak; CI does not run those. Long is for code that
// must know the tier, such as internal/wasmtest's check of prebuilt
// modules.
//
//	go test ./...                      # the fast tier
//	go test -tags long ./...           # both tiers
//	go test -tags long,soak -run TestHeavyQueryIsolation -v ./node
package testtier
