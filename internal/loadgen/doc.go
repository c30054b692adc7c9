// Package loadgen offers load to a target and measures its latency, the
// way `quarry bench` does for every setup it compares.
//
// Two kinds of run:
//
//   - OpenLoop sends requests at a fixed rate whatever the target does, and
//     measures each request's latency from the time it was scheduled to be
//     sent, not from when it actually was: a target (or a sender) that falls
//     behind makes the requests after it late, and that lateness is
//     latency. The schedule is never skipped or stretched, so a stall shows
//     as the latency of every request it delayed instead of as fewer
//     requests (no coordinated omission).
//   - ClosedLoop runs N callers that each send the next request as soon as
//     the last is answered: the target's maximum throughput at that
//     concurrency.
//
// Latencies go into Histogram, a lock-free log-linear histogram (HDR
// style: exact below 512 ns, then 256 buckets per power of two, so any
// quantile is within 0.4% of the recorded value).
package loadgen
