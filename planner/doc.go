// Package planner turns a search request into a Plan: the retrieval query
// built from the user's text and the index's query settings, the shards to
// ask, how many hits each returns, the deadline and how it is split, and the
// hedging and partial-result policy. A plan is plain data, shown in a
// request's profile.
//
// The planner is pure: no NATS, no index I/O, no plugins. The broker runs
// it between the rewriter and the fan-out.
package planner
