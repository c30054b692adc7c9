// Package pipeline is the machinery behind a team's live pipeline: what
// an index's plugins are and what lives longer than one request. The
// broker's run (package broker) calls the steps for each request, in
// order, and applies their answers; the broker keeps the live pipeline
// of each index, follows the registry, and writes the control plane.
// This package owns:
//
//   - each index's live pipeline and its registry revision (Live).
//   - the pipeline and its steps (Pipeline, Step): rewriters and rankers,
//     each with its policy, the fields it reads and its rerank depth, the
//     canary that takes a share of the queries (Step.Choose, sticky by a
//     context key), the shadow that runs beside the live step, and the
//     copies a shadow search runs (Quiet).
//   - their construction from an api.PipelineSpec (Loader): plugins
//     compiled, warmed and shared across pipeline versions, retired after
//     a grace period; variants of the live pipeline for replays and
//     relevance evaluations (Loader.Variant, Loader.BuildVariant).
//   - the automatic fallback's per-step windows and decisions
//     (FallbackLimits, Step.Observe, Trip: a fail-open step taken out at
//     once, a fail-closed one to be rolled back), and the rollback's
//     choice of the last good version (LastGood).
//   - shadows (Shadows): the bounded background runner of the steps'
//     shadow calls and shadow searches, and the tallies of their
//     comparisons with the live steps, which the broker publishes.
//   - interleaving experiments: the team-draft interleaving of a live
//     ranker and its canary (Interleave).
//   - pipeline files (File, StepFile, ReadFile, ParseFile, LoadFile,
//     Native, BuildGoPlugin): a pipeline as a JSON file, for development,
//     the demo and benchmarks.
//
// Writing what the fallback decides (pipeline revisions, plugin events),
// what an interleaving records and the shadows' tallies is the broker's
// work (its control-plane writer's, and its publisher's), not this
// package's: it knows no NATS, KV store or metrics. It imports the wire
// types (api, sdk/abi), the plugin host and the shared internals below
// the services, never the broker or another service (internal/archtest
// checks it).
package pipeline
