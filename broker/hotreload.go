package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
)

// WatchPipelines keeps the broker's pipelines equal to the quarry-pipelines
// bucket until ctx is done: a new version is loaded and warmed, then
// swapped in; one that cannot be loaded is logged, recorded as a plugin
// event, and the live pipeline stays. A broker that starts gets the current
// pipelines from the watch's initial values; when its NATS connection
// comes back after an outage, or the watch ends, the watch is made again
// (revisions already applied are not applied twice).
//
// Each index's plugins run in the runtime of the index's team (see
// api.IndexDefinition.Team), so teams share no instances or memory.
func (b *Broker) WatchPipelines(ctx context.Context, teams *plugins.Teams) error {
	l := pipeline.NewLoader(func(ctx context.Context, index string) (*plugins.Runtime, string, error) {
		team := "index-" + index
		if def, err := b.store.Index(ctx, index); err == nil {
			team = def.TeamOf()
		} else if !errors.Is(err, api.ErrNotFound) {
			return nil, "", fmt.Errorf("team of index %q: %w", index, err)
		}
		rt, err := teams.Runtime(ctx, team)
		return rt, team, err
	}, b.store.PluginBinary, b.cfg.FallbackWindow)
	l.SetVariantCooldown(b.cfg.FallbackVariantCooldown)
	b.mu.Lock()
	b.loader = l
	b.mu.Unlock()
	applied := map[string]uint64{} // index → revision live on this broker
	for {
		err := b.watchPipelines(ctx, l, applied)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errReconnected) {
			b.cfg.Logger.Warn("pipeline watch ended; watching again", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// errReconnected ends a pipeline watch when the broker's NATS connection
// reconnected. Follow itself carries on after an outage; a fresh watch is
// for the pipelines refused meanwhile (a binary that could not be
// fetched): it delivers every current pipeline again, the live ones are
// skipped (applied) and the refused ones are tried again.
var errReconnected = errors.New("NATS reconnected")

// reconnectCheck is how often a pipeline watch looks for a reconnection.
const reconnectCheck = 500 * time.Millisecond

// watchPipelines runs one watch of the pipelines bucket until ctx is done,
// the watch ends, or the connection reconnects.
func (b *Broker) watchPipelines(ctx context.Context, l *pipeline.Loader, applied map[string]uint64) error {
	reconnects := b.nc.Stats().Reconnects
	w, err := b.store.Follow(ctx, b.store.Pipelines, false)
	if err != nil {
		return fmt.Errorf("watch pipelines: %w", err)
	}
	defer w.Stop()
	tick := time.NewTicker(reconnectCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if b.nc.Stats().Reconnects != reconnects {
				return errReconnected
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch closed")
			}
			if e == nil { // every current pipeline is live (or refused)
				b.pipelinesReadyOnce()
				continue
			}
			if e.Revision() <= applied[e.Key()] {
				continue // already live
			}
			index := e.Key()
			if e.Operation() != jetstream.KeyValuePut {
				b.pipelines.Swap(index, nil, e.Revision())
				l.Retire(index, nil)
				applied[index] = e.Revision()
				continue
			}
			spec, err := meta.DecodePipeline(e)
			if err == nil {
				var pl *Pipeline
				var keys []string
				if pl, keys, err = l.Build(ctx, spec); err == nil {
					if len(pl.Rewriters)+len(pl.Rankers) == 0 {
						pl = nil
					}
					b.pipelines.Swap(index, pl, e.Revision())
					l.Retire(index, keys)
					applied[index] = e.Revision()
					b.cfg.Logger.Info("pipeline swapped in", "index", index, "revision", spec.Revision,
						"rewriters", len(spec.Rewriters), "rankers", len(spec.Rankers))
					continue
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			b.cfg.Logger.Error("pipeline refused; the live one stays", "index", index, "revision", e.Revision(), "err", err)
			// Not marked applied: a new watch (after a reconnection) tries
			// again, in case the cause was the outage.
			// The team sees why its change is not live: quarry plugin events.
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			b.recordEvent(ectx, api.PluginEvent{Index: index, Plugin: "pipeline", Version: fmt.Sprintf("revision %d", e.Revision()),
				Time: time.Now().UTC(), Event: "pipeline refused", Reason: err.Error() + "; the broker keeps serving the pipeline it had"})
			cancel()
		}
	}
}

// variant returns pl with one plugin's live step replaced by a pushed,
// validated version of it (for replays and relevance evaluations), or,
// when the plugin is not live on the index, with the version added as the
// last step of its kind, as activating it would (for `quarry dev`: a new
// plugin against the live pipeline); or an error naming what is wrong.
func (b *Broker) variant(ctx context.Context, index string, pl *Pipeline, v *api.Variant) (*Pipeline, error) {
	b.mu.RLock()
	l := b.loader
	b.mu.RUnlock()
	if l == nil {
		return nil, api.Errorf(api.CodeUnavailable, "this broker does not load plugins from the registry")
	}
	if v.Pipeline != nil {
		return b.variantPipeline(ctx, l, index, v.Pipeline)
	}
	ver, err := b.store.ValidPluginVersion(ctx, index, v.Plugin, v.Digest)
	if err != nil {
		return nil, api.Errorf(api.CodeOf(err), "variant: %v", err)
	}
	return l.Variant(ctx, index, pl, ver.Kind, v.Plugin, ver.Step)
}
