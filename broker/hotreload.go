package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// loader builds pipelines from stored specs, reusing the plugins already
// loaded (same binary and settings) across pipeline versions.
type loader struct {
	rt    *plugins.Runtime
	store *meta.Store

	window int // fallback window, in calls

	mu     sync.Mutex
	loaded map[string]*plugins.Plugin
	inUse  map[string]map[string]bool // index → keys its pipeline uses
}

func stepKey(kind plugins.Kind, s api.StepSpec) string {
	h := sha256.Sum256(s.Config)
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d", kind, s.Plugin, s.Digest, hex.EncodeToString(h[:8]), s.BudgetMS, s.Instances)
}

// build loads every step of spec (compiling and warming new plugins before
// the pipeline exists, so the swap itself is one pointer store).
func (l *loader) build(ctx context.Context, spec *api.PipelineSpec) (*Pipeline, []string, error) {
	p := &Pipeline{}
	var keys []string
	load := func(kind plugins.Kind, s api.StepSpec) (Step, error) {
		key := stepKey(kind, s)
		keys = append(keys, key)
		l.mu.Lock()
		plugin := l.loaded[key]
		l.mu.Unlock()
		if plugin == nil {
			wasm, err := l.store.PluginBinary(ctx, s.Digest)
			if err != nil {
				return Step{}, err
			}
			plugin, err = l.rt.Load(ctx, plugins.Spec{Name: s.Plugin, Version: s.Digest[len("sha256:"):][:12], Kind: kind,
				Config: s.Config, Budget: time.Duration(s.BudgetMS) * time.Millisecond, Instances: s.Instances}, wasm)
			if err != nil {
				return Step{}, err
			}
			l.mu.Lock()
			l.loaded[key] = plugin
			l.mu.Unlock()
		}
		policy := Policy(s.Policy)
		if policy == "" {
			policy = FailOpen
		}
		return Step{Plugin: plugin, Policy: policy, Fields: s.Fields, RerankDepth: s.RerankDepth, health: newHealth(l.window)}, nil
	}
	withCanary := func(kind plugins.Kind, s api.StepSpec) (Step, error) {
		st, err := load(kind, s)
		if err != nil || s.Canary == nil {
			return st, err
		}
		c, err := load(kind, s.Canary.Step)
		if err != nil {
			return Step{}, fmt.Errorf("canary: %w", err)
		}
		st.Canary, st.CanaryPercent, st.StickyKey = &c, s.Canary.Percent, s.Canary.StickyKey
		return st, nil
	}
	withShadow := func(kind plugins.Kind, s api.StepSpec) (Step, error) {
		st, err := withCanary(kind, s)
		if err != nil || s.Shadow == nil {
			return st, err
		}
		sh, err := load(kind, s.Shadow.Step)
		if err != nil {
			return Step{}, fmt.Errorf("shadow: %w", err)
		}
		st.Shadow, st.ShadowPercent = &sh, s.Shadow.Percent
		return st, nil
	}
	for _, s := range spec.Rewriters {
		st, err := withCanary(plugins.Rewriter, s)
		if err != nil {
			return nil, nil, fmt.Errorf("rewriter %s: %w", s.Plugin, err)
		}
		p.Rewriters = append(p.Rewriters, st)
	}
	for _, s := range spec.Rankers {
		st, err := withShadow(plugins.Ranker, s)
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
// swapped in; one that cannot be loaded is logged and the live pipeline
// stays. A broker that starts, or comes back after NATS was away, gets the
// current pipelines from the watch's initial values.
func (b *Broker) WatchPipelines(ctx context.Context, rt *plugins.Runtime) error {
	l := &loader{rt: rt, store: b.store, window: b.cfg.FallbackWindow, loaded: map[string]*plugins.Plugin{}, inUse: map[string]map[string]bool{}}
	b.mu.Lock()
	b.loader = l
	b.mu.Unlock()
	w, err := b.store.Pipelines.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("broker: watch pipelines: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // shutting down
				}
				return errors.New("broker: pipeline watch ended")
			}
			if e == nil {
				continue
			}
			index := e.Key()
			if e.Operation() != jetstream.KeyValuePut {
				b.SetPipeline(index, nil)
				l.retire(index, nil)
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
					l.retire(index, keys)
					b.cfg.Logger.Info("pipeline swapped in", "index", index, "revision", spec.Revision,
						"rewriters", len(spec.Rewriters), "rankers", len(spec.Rankers))
					continue
				}
			}
			b.cfg.Logger.Error("pipeline refused; the live one stays", "index", index, "revision", e.Revision(), "err", err)
		}
	}
}

// variant returns pl with one plugin's live step replaced by a pushed,
// validated version of it (for replays), or an error naming what is wrong.
func (b *Broker) variant(ctx context.Context, index string, pl *Pipeline, v *api.Variant) (*Pipeline, error) {
	b.mu.RLock()
	l := b.loader
	b.mu.RUnlock()
	if l == nil {
		return nil, api.Errorf(api.CodeUnavailable, "this broker does not load plugins from the registry")
	}
	if pl == nil {
		return nil, api.BadRequest("variant: index %q has no pipeline", index)
	}
	e, err := b.store.PluginVersions.Get(ctx, index+"."+v.Plugin+"."+strings.TrimPrefix(v.Digest, "sha256:"))
	if err != nil {
		return nil, api.NotFound("variant: plugin %s has no version %s on index %q", v.Plugin, v.Digest, index)
	}
	var ver api.PluginVersion
	if err := json.Unmarshal(e.Value(), &ver); err != nil {
		return nil, err
	}
	if !ver.Valid {
		return nil, api.BadRequest("variant: version %s of %s failed validation: %s", v.Digest, v.Plugin, ver.Error)
	}
	kind := plugins.Kind(ver.Kind)
	out := &Pipeline{Rewriters: slices.Clone(pl.Rewriters), Rankers: slices.Clone(pl.Rankers)}
	steps := out.Rewriters
	if kind == plugins.Ranker {
		steps = out.Rankers
	}
	for i := range steps {
		if steps[i].Plugin.Spec().Name != v.Plugin {
			continue
		}
		l.mu.Lock()
		key := stepKey(kind, ver.Step)
		plugin := l.loaded[key]
		l.mu.Unlock()
		if plugin == nil {
			wasm, err := b.store.PluginBinary(ctx, ver.Digest)
			if err != nil {
				return nil, err
			}
			if plugin, err = l.rt.Load(ctx, plugins.Spec{Name: v.Plugin, Version: strings.TrimPrefix(ver.Digest, "sha256:")[:12], Kind: kind,
				Config: ver.Step.Config, Budget: time.Duration(ver.Step.BudgetMS) * time.Millisecond, Instances: 1}, wasm); err != nil {
				return nil, err
			}
			l.mu.Lock()
			l.loaded[key] = plugin
			l.mu.Unlock()
		}
		st := steps[i]
		st.Plugin, st.Canary, st.Shadow = plugin, nil, nil
		st.Fields, st.RerankDepth = ver.Step.Fields, ver.Step.RerankDepth
		steps[i] = st
		return out, nil
	}
	return nil, api.BadRequest("variant: plugin %s is not live on index %q", v.Plugin, index)
}
