// Package admission decides which team's request runs next, on the broker
// and on the searcher alike: one type, Admission, holds
//
//   - each team's limits (Admit): its searches in flight and its rate, a
//     token bucket a search pays for by its cost (api.TeamSettings, with
//     the owner's defaults);
//   - the fair queue (Push, Next, Done): a FIFO per team served
//     round-robin by a fixed number of workers, so that a team sending
//     many requests waits behind its own;
//   - heavy turns: a team whose recent requests cost more than HeavyAfter
//     on average runs at most HeavyTurns of them at once while another
//     team is active, and a heavy request already running gives way at
//     its checkpoints (Turn) while light requests wait or run.
//
// A Go program cannot preempt a goroutine, nor give one priority over
// another: the only way to keep a heavy team's work from taking every core
// is not to start it, which is what a queue in front of a fixed pool of
// workers decides (nats-server serves its own API the same way, with an
// ipQueue and workers).
package admission
