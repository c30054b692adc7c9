// Package console is Quarry's web console: static pages (HTML, CSS and
// JavaScript modules, embedded in the binary) that every role serving the
// HTTP API serves at "/" (package httpapi mounts Handler). The pages call
// the HTTP JSON API only, with the token the user gives them (kept in the
// browser tab's sessionStorage), so a team sees and acts on exactly what
// its token may: its own indexes, through the same routes and the same
// admin API as the CLI.
//
// There is no front-end toolchain and nothing is fetched from elsewhere:
// the files under assets/ are what the browser runs (docs/RATIONALE.md,
// "The console"). The pages:
//
//   - Indexes: documents, shards, replicas, generation and lag, freshness,
//     query settings, the team.
//   - Playground: a search with q, query, filter and context; hits, the
//     pipeline report, the rewrite before and after, the profile's stages
//     drawn to scale, and why a hit matched.
//   - Plugins: the live pipeline and its history, versions, metrics,
//     canary and shadow figures, events; activate, canary, promote, shadow
//     and roll back.
//   - Roles: the services micro discovery finds on NATS, the searcher
//     replicas, this node's health and readiness.
//   - Traffic: per index and team, queries/s, latency quantiles, errors and
//     refusals, from the node's Prometheus metrics.
//
// The browser tests (node/console_test.go) drive headless
// Chromium through every page.
package console
