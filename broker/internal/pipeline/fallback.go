package pipeline

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
)

// health watches one step's recent calls: how many failed, and how many
// took longer than the step's latency budget. When either share passes
// the broker's threshold the step trips the automatic fallback, once per
// loaded pipeline version: a fail-open step is taken out (skipped, and
// said so) until a new pipeline version replaces it; a fail-closed step's
// plugin is rolled back to its last good version in a new pipeline
// revision (by the broker: Trip).
type health struct {
	mu       sync.Mutex
	window   []uint8 // per call: callFailed | callSlow
	next, n  int
	failures int
	slow     int
	tripped  bool
	disabled atomic.Bool // a fail-open step taken out
	// reason and at say why and when it tripped; cooldown, for the
	// variants' health, how long it stays tripped (h.mu).
	reason   string
	at       time.Time
	cooldown time.Duration
}

// expired reports whether h tripped longer than cooldown ago.
func (h *health) expired(cooldown time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tripped && time.Since(h.at) > cooldown
}

// why says why h tripped.
func (h *health) why() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

// until is when a variants' health that tripped is started afresh.
func (h *health) until() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.at.Add(h.cooldown)
}

// A call's outcome, in health's window.
const (
	callFailed uint8 = 1 << iota
	callSlow
)

// tripCause is why a step tripped the fallback.
type tripCause uint8

const (
	notTripped tripCause = iota
	tripErrors
	tripLatency
)

// FallbackLimits are the automatic fallback's thresholds.
type FallbackLimits struct {
	errorRate, slowRate float64
	// minCalls is how many calls the error rate needs; minSlowCalls how
	// many the slow rate needs: also enough for the quantile it stands
	// for to exist (100 calls for 1%, "p99"), at most the whole window.
	minCalls, minSlowCalls int
}

// NewFallbackLimits returns the thresholds of a fallback that trips a
// step when more than errorRate of its last window calls (at least
// minCalls) failed, or more than slowRate of them took longer than its
// latency budget.
func NewFallbackLimits(errorRate, slowRate float64, window, minCalls int) FallbackLimits {
	need := window
	if slowRate > 0 {
		need = min(need, int(math.Ceil(1/slowRate-1e-9)))
	}
	return FallbackLimits{errorRate: errorRate, slowRate: slowRate, minCalls: minCalls, minSlowCalls: max(minCalls, need)}
}

func newHealth(window int) *health { return &health{window: make([]uint8, window)} }

// record adds a call's outcome and reports whether this call tripped the
// fallback (once), why, and the count behind it over the calls in the
// window. It does not allocate.
func (h *health) record(failed, slow bool, lim *FallbackLimits) (cause tripCause, count, calls int) {
	var out uint8
	if failed {
		out |= callFailed
	}
	if slow {
		out |= callSlow
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == len(h.window) {
		old := h.window[h.next]
		h.failures -= int(old & callFailed)
		h.slow -= int(old&callSlow) >> 1
	}
	h.window[h.next] = out
	h.failures += int(out & callFailed)
	h.slow += int(out&callSlow) >> 1
	h.next = (h.next + 1) % len(h.window)
	h.n = min(h.n+1, len(h.window))
	switch {
	case h.tripped:
	case h.n >= lim.minCalls && float64(h.failures) > lim.errorRate*float64(h.n):
		h.tripped = true
		return tripErrors, h.failures, h.n
	case h.n >= lim.minSlowCalls && float64(h.slow) > lim.slowRate*float64(h.n):
		h.tripped = true
		return tripLatency, h.slow, h.n
	}
	return notTripped, 0, h.n
}

// percent renders a rate as a percentage: 0.01 → "1%".
func percent(rate float64) string {
	return strconv.FormatFloat(100*rate, 'g', 3, 64) + "%"
}

// Trip is the automatic fallback's decision on a step whose call tripped
// it.
type Trip struct {
	// Reason says why, in words for the plugin's events and the logs.
	Reason string
	// RollBack: the step fails closed, its plugin is to be rolled back to
	// its last good version (LastGood). Otherwise the step failed open
	// and is taken out already (Disabled), on this broker.
	RollBack bool
	// Variant: the step is a variant search's; it is refused in variant
	// searches for the loader's cooldown (Step.VariantRefused), and
	// nothing is written: the live pipeline is not concerned.
	Variant bool
}

// Observe records a step's call (how long it took, and its error) in the
// step's window and reports whether the call tripped the fallback (once
// per loaded step), and what to do about it. A fail-open step that trips
// is taken out at once: it is skipped from the next call. Steps without
// the fallback (not from the registry) and quiet steps are not observed.
// A variant search's step counts toward the variants' record of its
// version, shared by every replay and evaluation; one that trips is
// refused in them for a while. It does not allocate unless the step trips.
func (s *Step) Observe(took time.Duration, err error, lim *FallbackLimits) (Trip, bool) {
	if s.health == nil || s.quiet {
		return Trip{}, false
	}
	slow := s.LatencyBudget > 0 && took > s.LatencyBudget
	cause, count, calls := s.health.record(err != nil, slow, lim)
	if cause == notTripped {
		return Trip{}, false
	}
	var reason string
	if cause == tripErrors {
		reason = fmt.Sprintf("%d of its last %d calls failed (threshold %s)", count, calls, percent(lim.errorRate))
		if err != nil {
			reason += fmt.Sprintf("; last error: %v", err)
		}
	} else {
		reason = fmt.Sprintf("%d of its last %d calls took longer than its %s latency budget (threshold %s)",
			count, calls, s.LatencyBudget, percent(lim.slowRate))
	}
	s.health.mu.Lock()
	s.health.reason, s.health.at = reason, time.Now()
	s.health.mu.Unlock()
	if s.variant { // refused in variant searches for a while, whatever its policy
		s.health.disabled.Store(true)
		return Trip{Reason: reason, Variant: true}, true
	}
	if s.Policy == api.FailClosed {
		return Trip{Reason: reason, RollBack: true}, true
	}
	s.health.disabled.Store(true)
	return Trip{Reason: reason}, true
}

// RollbackOutcome is what LastGood did to a pipeline.
type RollbackOutcome uint8

const (
	// VersionGone: the pipeline no longer runs the version (changed).
	VersionGone RollbackOutcome = iota
	// NoEarlierVersion: no earlier revision has another version.
	NoEarlierVersion
	// Restored: the live step is an earlier revision's step again.
	Restored
	// CanaryEnded: the version was the step's canary; the canary is gone.
	CanaryEnded
)

// Rollback is what LastGood did, and between which versions.
type Rollback struct {
	Outcome  RollbackOutcome
	From, To string // versions (short digests)
	At       uint64 // the revision the restored step comes from
}

// LastGood changes cur so that plugin name (a kind step) no longer runs
// version (a short digest). If the live step runs it, the step becomes
// the plugin's step in the most recent earlier revision of hist (oldest
// first) whose digest differs: its last good version, with its settings
// then (the live step's canary and shadow stay). If the step's canary
// runs it, the canary ends: the live version is the last good one.
func LastGood(cur *api.PipelineSpec, hist []*api.PipelineSpec, kind plugins.Kind, name, version string) Rollback {
	live := cur.StepOf(kind, name)
	switch {
	case live == nil:
		return Rollback{Outcome: VersionGone}
	case api.ShortDigest(live.Digest) == version:
	case live.Canary != nil && api.ShortDigest(live.Canary.Step.Digest) == version:
		live.Canary = nil
		return Rollback{Outcome: CanaryEnded, From: version, To: api.ShortDigest(live.Digest)}
	default:
		return Rollback{Outcome: VersionGone}
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Revision >= cur.Revision {
			continue
		}
		old := hist[i].StepOf(kind, name)
		if old == nil || old.Digest == live.Digest {
			continue
		}
		good := *old
		good.Canary, good.Shadow = live.Canary, live.Shadow
		*live = good
		return Rollback{Outcome: Restored, From: version, To: api.ShortDigest(good.Digest), At: hist[i].Revision}
	}
	return Rollback{Outcome: NoEarlierVersion}
}
