package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
)

// rollbackTimeout bounds the work of one automatic rollback (reading the
// pipeline and its history, writing the new revision and the event), or
// of one take-out (the event and the new revision).
const rollbackTimeout = 10 * time.Second

// health watches one step's recent calls: how many failed, and how many
// took longer than the step's latency budget. When either share passes
// the broker's threshold the step trips the automatic fallback, once per
// loaded pipeline version: a fail-open step is taken out (skipped, and
// said so) until a new pipeline version replaces it; a fail-closed step's
// plugin is rolled back to its last good version in a new pipeline
// revision. The event is recorded in the quarry-plugin-events bucket.
type health struct {
	mu       sync.Mutex
	window   []uint8 // per call: callFailed | callSlow
	next, n  int
	failures int
	slow     int
	tripped  bool
	disabled atomic.Bool // a fail-open step taken out
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

// fallbackLimits are the broker's fallback thresholds.
type fallbackLimits struct {
	errorRate, slowRate float64
	// minCalls is how many calls the error rate needs; minSlowCalls how
	// many the slow rate needs: also enough for the quantile it stands
	// for to exist (100 calls for 1%, "p99"), at most the whole window.
	minCalls, minSlowCalls int
}

func newFallbackLimits(c *Config) fallbackLimits {
	need := c.FallbackWindow
	if c.FallbackSlowRate > 0 {
		need = min(need, int(math.Ceil(1/c.FallbackSlowRate-1e-9)))
	}
	return fallbackLimits{errorRate: c.FallbackErrorRate, slowRate: c.FallbackSlowRate,
		minCalls: c.FallbackMinCalls, minSlowCalls: max(c.FallbackMinCalls, need)}
}

func newHealth(window int) *health { return &health{window: make([]uint8, window)} }

// record adds a call's outcome and reports whether this call tripped the
// fallback (once), why, and the count behind it over the calls in the
// window. It does not allocate.
func (h *health) record(failed, slow bool, lim *fallbackLimits) (cause tripCause, count, calls int) {
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

// observe records a step's call (how long it took, and its error) and,
// if it trips the fallback, acts on it: a fail-open step is taken out at
// once (this broker skips it from the next call); the writes, the take-out
// in a new pipeline revision or a fail-closed step's rollback, are left
// to the broker's control-plane writer (controlplane.go), never waited
// for.
func (b *Broker) observe(index string, s *Step, took time.Duration, err error) {
	if s.health == nil || s.quiet {
		return
	}
	slow := s.LatencyBudget > 0 && took > s.LatencyBudget
	cause, count, calls := s.health.record(err != nil, slow, &b.fallback)
	if cause == notTripped {
		return
	}
	var reason string
	if cause == tripErrors {
		reason = fmt.Sprintf("%d of its last %d calls failed (threshold %s)", count, calls, percent(b.cfg.FallbackErrorRate))
		if err != nil {
			reason += fmt.Sprintf("; last error: %v", err)
		}
	} else {
		reason = fmt.Sprintf("%d of its last %d calls took longer than its %s latency budget (threshold %s)",
			count, calls, s.LatencyBudget, percent(b.cfg.FallbackSlowRate))
	}
	spec := s.Plugin.Spec()
	w := cpWrite{kind: cpRollBack, index: index, pluginKind: spec.Kind, plugin: spec.Name, version: spec.Version, reason: reason}
	if s.Policy == api.FailClosed {
		b.cfg.Logger.Warn("fail-closed plugin tripped the fallback; rolling it back", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", reason)
		b.cp.emit(w)
		return
	}
	s.health.disabled.Store(true)
	b.cfg.Logger.Warn("plugin taken out of the pipeline", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", reason)
	w.kind = cpTakeOut
	w.ev = api.PluginEvent{Index: index, Plugin: spec.Name, Version: spec.Version, Time: time.Now().UTC(), Event: "taken out", Reason: reason}
	b.cp.emit(w)
}

// takeOut records in a new pipeline revision that the automatic fallback
// took a fail-open step out (StepSpec.TakenOut), so that every broker
// skips it, `quarry pipeline show` says so, and a later revision written
// for another reason does not bring it back. Compare-and-set: brokers
// tripping at once make one change; nothing is written if the step no
// longer runs the version.
func (b *Broker) takeOut(ctx context.Context, index string, kind plugins.Kind, name, version string, ev api.PluginEvent) {
	_, err := b.store.ChangePipeline(ctx, index, fmt.Sprintf("automatic fallback: %s %s taken out", name, version), func(cur *api.PipelineSpec) error {
		st := findStep(cur, kind, name)
		if st == nil || api.ShortDigest(st.Digest) != version || st.TakenOut != nil {
			return meta.ErrNoChange
		}
		st.TakenOut = &api.TakenOut{Time: ev.Time, Reason: ev.Reason}
		return nil
	})
	if err != nil {
		b.cfg.Logger.Error("automatic fallback: take the step out of the pipeline", "index", index, "plugin", name, "err", err)
	}
}

// recordEvent writes a plugin event to the events bucket.
func (b *Broker) recordEvent(ctx context.Context, ev api.PluginEvent) {
	ev.Broker = b.shadows.id
	raw, err := json.Marshal(ev)
	if err != nil {
		b.cfg.Logger.Warn("record plugin event", "err", err)
		return
	}
	key := ev.Index + "." + ev.Plugin + "." + strconv.FormatInt(ev.Time.UnixNano(), 10)
	if _, err := b.store.Events.Put(ctx, key, raw); err != nil {
		b.cfg.Logger.Warn("record plugin event", "index", ev.Index, "plugin", ev.Plugin, "err", err)
	}
}

// rollBack takes a fail-closed plugin version that tripped the fallback out
// of the index's pipeline: it writes a new pipeline revision with the
// plugin's last good version (see lastGood) through meta.ChangePipeline,
// the one compare-and-set path of pipeline revisions, so that brokers
// tripping at once make one change: a broker that loses the race (its
// compare-and-set fails: another broker rolled it back, or a person
// changed the pipeline) or finds the version already gone does nothing.
// Every broker's pipeline watch then swaps the new revision in. The
// outcome is recorded as a plugin event, including when there is no
// earlier version to roll back to (the step then stays, failing closed).
func (b *Broker) rollBack(ctx context.Context, index string, kind plugins.Kind, name, version, reason string) {
	log := b.cfg.Logger.With("index", index, "plugin", name, "version", version)
	var (
		r     rollback
		read  uint64 // the revision the rollback was computed on
		tried bool
	)
	spec, err := b.store.ChangePipeline(ctx, index, fmt.Sprintf("automatic fallback: %s %s rolled back", name, version), func(cur *api.PipelineSpec) error {
		if tried {
			// ChangePipeline edits again only when its compare-and-set
			// failed: someone else changed the pipeline first.
			return errPipelineChanged
		}
		tried, read = true, cur.Revision
		hist, err := b.store.PipelineHistory(ctx, index)
		if err != nil {
			return err
		}
		if r = lastGood(cur, hist, kind, name, version); r.outcome == versionGone || r.outcome == noEarlierVersion {
			return meta.ErrNoChange
		}
		return nil
	})
	switch {
	case errors.Is(err, errPipelineChanged):
		log.Info("automatic rollback: the pipeline changed meanwhile (another broker rolled it back, or a person changed it); nothing to do")
		return
	case err != nil:
		log.Error("automatic rollback: change the pipeline", "err", err)
		return
	}
	ev := api.PluginEvent{Index: index, Plugin: name, Version: version, Time: time.Now().UTC()}
	switch r.outcome {
	case versionGone:
		log.Info("automatic rollback: the pipeline no longer runs this version; nothing to do", "revision", read)
		return
	case noEarlierVersion:
		ev.Event = "not rolled back"
		ev.Reason = reason + fmt.Sprintf("; no earlier version of %s in the pipeline's history to roll back to, so the step stays as it is and its queries keep failing closed", name)
		log.Warn("automatic rollback: nothing to roll back to; the step keeps failing closed")
	default:
		rev := spec.Revision
		ev.Event = "rolled back"
		if r.outcome == canaryEnded {
			ev.Reason = reason + fmt.Sprintf("; its canary was ended, so every query goes to the live version %s again (pipeline revision %d)", r.to, rev)
		} else {
			ev.Reason = reason + fmt.Sprintf("; rolled back from %s to %s, its version at pipeline revision %d (now revision %d)", r.from, r.to, r.at, rev)
		}
		log.Warn("plugin rolled back automatically", "from", r.from, "to", r.to, "revision", rev)
	}
	b.recordEvent(ctx, ev)
}

// errPipelineChanged ends a rollback whose compare-and-set failed.
var errPipelineChanged = errors.New("the pipeline changed meanwhile")

// rollbackOutcome is what lastGood did to a pipeline.
type rollbackOutcome uint8

const (
	// versionGone: the pipeline no longer runs the version (changed).
	versionGone rollbackOutcome = iota
	// noEarlierVersion: no earlier revision has another version.
	noEarlierVersion
	// restored: the live step is an earlier revision's step again.
	restored
	// canaryEnded: the version was the step's canary; the canary is gone.
	canaryEnded
)

type rollback struct {
	outcome  rollbackOutcome
	from, to string // versions (short digests)
	at       uint64 // the revision the restored step comes from
}

// lastGood changes cur so that plugin name (a kind step) no longer runs
// version (a short digest). If the live step runs it, the step becomes
// the plugin's step in the most recent earlier revision of hist (oldest
// first) whose digest differs: its last good version, with its settings
// then (the live step's canary and shadow stay). If the step's canary
// runs it, the canary ends: the live version is the last good one.
func lastGood(cur *api.PipelineSpec, hist []*api.PipelineSpec, kind plugins.Kind, name, version string) rollback {
	live := findStep(cur, kind, name)
	switch {
	case live == nil:
		return rollback{outcome: versionGone}
	case api.ShortDigest(live.Digest) == version:
	case live.Canary != nil && api.ShortDigest(live.Canary.Step.Digest) == version:
		live.Canary = nil
		return rollback{outcome: canaryEnded, from: version, to: api.ShortDigest(live.Digest)}
	default:
		return rollback{outcome: versionGone}
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Revision >= cur.Revision {
			continue
		}
		old := findStep(hist[i], kind, name)
		if old == nil || old.Digest == live.Digest {
			continue
		}
		good := *old
		good.Canary, good.Shadow = live.Canary, live.Shadow
		*live = good
		return rollback{outcome: restored, from: version, to: api.ShortDigest(good.Digest), at: hist[i].Revision}
	}
	return rollback{outcome: noEarlierVersion}
}

// findStep returns plugin name's step among spec's steps of kind.
func findStep(spec *api.PipelineSpec, kind plugins.Kind, name string) *api.StepSpec {
	if st, ranker := spec.Step(name); st != nil && ranker == (kind == plugins.Ranker) {
		return st
	}
	return nil
}

// disabled reports whether the fallback took a step out.
func (s *Step) disabled() bool { return s.health != nil && s.health.disabled.Load() }
