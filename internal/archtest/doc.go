// Package archtest holds no code: its tests check that imports flow one
// way, as README.md's "Layout" and docs/RATIONALE.md's "Layers" say —
// cmd → node (the composition root) and httpapi (the HTTP door, through
// the client) → services (broker, searcher, indexer, registry) and the
// client → shared internal packages and wire types — with no cycles,
// nothing under internal/ importing a service or the top layer, the
// broker's own packages (broker/internal/...) importing neither the
// broker nor another service, and nothing below importing the top layer.
package archtest
