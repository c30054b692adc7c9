package broker

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
)

// retireAfter is how long a plugin no pipeline uses stays loaded, so
// queries that started with it finish on it.
const retireAfter = 30 * time.Second

// loader builds pipelines from specs, reusing the plugins already loaded
// (same binary and settings) across pipeline versions. Registry pipelines
// and pipeline files both go through it; only where binaries come from
// differs.
type loader struct {
	// runtime returns the plugin runtime of an index's team, and the
	// team's name.
	runtime func(ctx context.Context, index string) (*plugins.Runtime, string, error)
	// binary returns a plugin binary by digest.
	binary func(ctx context.Context, digest string) ([]byte, error)
	// window is the automatic fallback's window, in calls (0: no
	// fallback).
	window int

	mu     sync.Mutex
	loaded map[string]*plugins.Plugin
	inUse  map[string]map[string]bool // index → keys its pipeline uses
}

func newLoader(runtime func(context.Context, string) (*plugins.Runtime, string, error), binary func(context.Context, string) ([]byte, error), window int) *loader {
	return &loader{runtime: runtime, binary: binary, window: window, loaded: map[string]*plugins.Plugin{}, inUse: map[string]map[string]bool{}}
}

func stepKey(kind plugins.Kind, s api.StepSpec) string {
	h := sha256.Sum256(s.Config)
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d", kind, s.Plugin, s.Digest, hex.EncodeToString(h[:8]), s.BudgetMS, s.Instances)
}

// plugin returns the loaded plugin of a step, compiling and warming it the
// first time.
func (l *loader) plugin(ctx context.Context, index string, kind plugins.Kind, s api.StepSpec) (*plugins.Plugin, string, error) {
	rt, team, err := l.runtime(ctx, index)
	if err != nil {
		return nil, "", err
	}
	key := team + "|" + stepKey(kind, s) // a team's plugins live in its own runtime
	l.mu.Lock()
	p := l.loaded[key]
	l.mu.Unlock()
	if p != nil {
		return p, key, nil
	}
	wasm, err := l.binary(ctx, s.Digest)
	if err != nil {
		return nil, "", err
	}
	p, err = rt.Load(ctx, plugins.Spec{Name: s.Plugin, Version: strings.TrimPrefix(s.Digest, "sha256:")[:12], Kind: kind,
		Config: s.Config, Budget: time.Duration(s.BudgetMS) * time.Millisecond, Instances: s.Instances}, wasm)
	if err != nil {
		return nil, "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev := l.loaded[key]; prev != nil { // loaded meanwhile: keep one
		p.Close(context.Background())
		return prev, key, nil
	}
	l.loaded[key] = p
	return p, key, nil
}

// step turns a stored step (with its canary and its shadow) into a
// pipeline step, appending the plugins' keys to keys.
func (l *loader) step(ctx context.Context, index string, kind plugins.Kind, s api.StepSpec, keys *[]string) (Step, error) {
	p, key, err := l.plugin(ctx, index, kind, s)
	if err != nil {
		return Step{}, err
	}
	*keys = append(*keys, key)
	st := Step{Plugin: p, Policy: cmp.Or(s.Policy, api.FailOpen), Fields: s.Fields, RerankDepth: s.RerankDepth,
		LatencyBudget: time.Duration(s.LatencyBudgetMS) * time.Millisecond}
	if l.window > 0 {
		st.health = newHealth(l.window)
	}
	if s.TakenOut != nil { // the automatic fallback took it out earlier
		if st.health == nil {
			st.health = newHealth(1)
		}
		st.health.tripped = true
		st.health.disabled.Store(true)
	}
	if s.Canary != nil {
		c, err := l.step(ctx, index, kind, s.Canary.Step, keys)
		if err != nil {
			return Step{}, fmt.Errorf("canary: %w", err)
		}
		st.Canary, st.CanaryPercent, st.StickyKey = &c, s.Canary.Percent, s.Canary.StickyKey
		if s.Canary.Interleave != nil && kind == plugins.Ranker {
			st.interleave = &interleaving{live: s.Digest, candidate: s.Canary.Step.Digest}
		}
	}
	if s.Shadow != nil {
		sh, err := l.step(ctx, index, kind, s.Shadow.Step, keys)
		if err != nil {
			return Step{}, fmt.Errorf("shadow: %w", err)
		}
		st.Shadow, st.ShadowPercent = &sh, s.Shadow.Percent
	}
	return st, nil
}

// build loads every step of spec (compiling and warming new plugins before
// the pipeline exists, so the swap itself is one pointer store) and
// returns the keys of the plugins it uses.
func (l *loader) build(ctx context.Context, spec *api.PipelineSpec) (*Pipeline, []string, error) {
	p := &Pipeline{}
	var keys []string
	for _, s := range spec.Rewriters {
		st, err := l.step(ctx, spec.Index, plugins.Rewriter, s, &keys)
		if err != nil {
			return nil, nil, fmt.Errorf("rewriter %s: %w", s.Plugin, err)
		}
		p.Rewriters = append(p.Rewriters, st)
	}
	for _, s := range spec.Rankers {
		st, err := l.step(ctx, spec.Index, plugins.Ranker, s, &keys)
		if err != nil {
			return nil, nil, fmt.Errorf("ranker %s: %w", s.Plugin, err)
		}
		p.Rankers = append(p.Rankers, st)
	}
	return p, keys, nil
}

// retire closes, after a grace period, plugins no pipeline uses any more.
func (l *loader) retire(index string, keys []string) {
	l.mu.Lock()
	used := map[string]bool{}
	for _, k := range keys {
		used[k] = true
	}
	if keys == nil {
		delete(l.inUse, index)
	} else {
		l.inUse[index] = used
	}
	l.mu.Unlock()
	time.AfterFunc(retireAfter, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k, p := range l.loaded {
			stillUsed := false
			for _, set := range l.inUse {
				stillUsed = stillUsed || set[k]
			}
			if !stillUsed {
				delete(l.loaded, k)
				p.Close(context.Background())
			}
		}
	})
}

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
	l := newLoader(func(ctx context.Context, index string) (*plugins.Runtime, string, error) {
		team := "index-" + index
		if def, err := b.store.Index(ctx, index); err == nil {
			team = def.TeamOf()
		} else if !errors.Is(err, api.ErrNotFound) {
			return nil, "", fmt.Errorf("team of index %q: %w", index, err)
		}
		rt, err := teams.Runtime(ctx, team)
		return rt, team, err
	}, b.store.PluginBinary, b.cfg.FallbackWindow)
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
func (b *Broker) watchPipelines(ctx context.Context, l *loader, applied map[string]uint64) error {
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
				b.SetPipeline(index, nil)
				b.setRevision(index, e.Revision())
				l.retire(index, nil)
				applied[index] = e.Revision()
				continue
			}
			spec, err := meta.DecodePipeline(e)
			if err == nil {
				var pl *Pipeline
				var keys []string
				if pl, keys, err = l.build(ctx, spec); err == nil {
					if len(pl.Rewriters)+len(pl.Rankers) == 0 {
						pl = nil
					}
					b.SetPipeline(index, pl)
					b.setRevision(index, e.Revision())
					l.retire(index, keys)
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
	if pl == nil {
		pl = &Pipeline{}
	}
	ver, err := b.store.ValidPluginVersion(ctx, index, v.Plugin, v.Digest)
	if err != nil {
		return nil, api.Errorf(api.CodeOf(err), "variant: %v", err)
	}
	kind := plugins.Kind(ver.Kind)
	out := &Pipeline{Rewriters: slices.Clone(pl.Rewriters), Rankers: slices.Clone(pl.Rankers)}
	steps := &out.Rewriters
	if kind == plugins.Ranker {
		steps = &out.Rankers
	}
	plugin, _, err := l.plugin(ctx, index, kind, ver.Step)
	if err != nil {
		return nil, err
	}
	for i := range *steps {
		if (*steps)[i].Plugin.Spec().Name != v.Plugin {
			continue
		}
		st := (*steps)[i]
		st.Plugin, st.Canary, st.Shadow = plugin, nil, nil
		st.health = nil // a variant's failures are not the live version's
		st.Fields, st.RerankDepth = ver.Step.Fields, ver.Step.RerankDepth
		(*steps)[i] = st
		return out, nil
	}
	*steps = append(*steps, Step{Plugin: plugin, Policy: cmp.Or(ver.Step.Policy, api.FailOpen), Fields: ver.Step.Fields,
		RerankDepth: ver.Step.RerankDepth, LatencyBudget: time.Duration(ver.Step.LatencyBudgetMS) * time.Millisecond})
	return out, nil
}
