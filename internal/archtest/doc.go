// Package archtest holds no code: its test checks that imports flow one
// way, as DESIGN.md's "Layers" section says — cmd → services (broker,
// searcher, indexer) → shared internal packages and wire types — with no
// cycles and nothing importing the top layer.
package archtest
