package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
)

// rollbackTimeout bounds the work of one automatic rollback (reading the
// pipeline and its history, writing the new revision and the event), or
// of one take-out (the event and the new revision).
const rollbackTimeout = 10 * time.Second

// newFallbackLimits are the fallback thresholds of a broker's
// configuration.
func newFallbackLimits(c *Config) pipeline.FallbackLimits {
	return pipeline.NewFallbackLimits(c.FallbackErrorRate, c.FallbackSlowRate, c.FallbackWindow, c.FallbackMinCalls)
}

// observe records a step's call (how long it took, and its error) and,
// if it trips the fallback (pipeline.Step.Observe), acts on it: a
// variant search's step is refused in variant searches for a while (only
// logged: the live pipeline is not concerned); a
// fail-open step is taken out at once (this broker skips it from the next
// call); the writes, the take-out in a new pipeline revision or a
// fail-closed step's rollback, are left to the broker's control-plane
// writer (controlplane.go), never waited for.
func (b *Broker) observe(index string, s *Step, took time.Duration, err error) {
	trip, tripped := s.Observe(took, err, &b.fallback)
	if !tripped {
		return
	}
	spec := s.Plugin.Spec()
	if trip.Variant {
		b.cfg.Logger.Warn("plugin version taken out of variant searches (replays, evaluations) for a while", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", trip.Reason)
		return
	}
	w := cpWrite{kind: cpRollBack, index: index, pluginKind: spec.Kind, plugin: spec.Name, version: spec.Version, reason: trip.Reason}
	if trip.RollBack {
		b.cfg.Logger.Warn("fail-closed plugin tripped the fallback; rolling it back", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", trip.Reason)
		b.cp.emit(w)
		return
	}
	b.cfg.Logger.Warn("plugin taken out of the pipeline", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", trip.Reason)
	w.kind = cpTakeOut
	w.ev = api.PluginEvent{Index: index, Plugin: spec.Name, Version: spec.Version, Time: time.Now().UTC(), Event: "taken out", Reason: trip.Reason}
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
		st := cur.StepOf(kind, name)
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
	ev.Broker = b.id
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
// plugin's last good version (see pipeline.LastGood) through meta.ChangePipeline,
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
		r     pipeline.Rollback
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
		if r = pipeline.LastGood(cur, hist, kind, name, version); r.Outcome == pipeline.VersionGone || r.Outcome == pipeline.NoEarlierVersion {
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
	switch r.Outcome {
	case pipeline.VersionGone:
		log.Info("automatic rollback: the pipeline no longer runs this version; nothing to do", "revision", read)
		return
	case pipeline.NoEarlierVersion:
		ev.Event = "not rolled back"
		ev.Reason = reason + fmt.Sprintf("; no earlier version of %s in the pipeline's history to roll back to, so the step stays as it is and its queries keep failing closed", name)
		log.Warn("automatic rollback: nothing to roll back to; the step keeps failing closed")
	default:
		rev := spec.Revision
		ev.Event = "rolled back"
		if r.Outcome == pipeline.CanaryEnded {
			ev.Reason = reason + fmt.Sprintf("; its canary was ended, so every query goes to the live version %s again (pipeline revision %d)", r.To, rev)
		} else {
			ev.Reason = reason + fmt.Sprintf("; rolled back from %s to %s, its version at pipeline revision %d (now revision %d)", r.From, r.To, r.At, rev)
		}
		log.Warn("plugin rolled back automatically", "from", r.From, "to", r.To, "revision", rev)
	}
	b.recordEvent(ctx, ev)
}

// errPipelineChanged ends a rollback whose compare-and-set failed.
var errPipelineChanged = errors.New("the pipeline changed meanwhile")
