package pipeline

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
)

// retireAfter is how long a plugin no pipeline uses stays loaded, so
// queries that started with it finish on it.
const retireAfter = 30 * time.Second

// stopAfter is how long a call of a plugin that has left every pipeline
// may still run: then it is stopped (plugins.Plugin.StopCalls), whatever
// its budget, so that removing or replacing a plugin leaves nothing of
// it running. Calls begun later (by queries that started before the
// change) run as usual until retireAfter.
const stopAfter = time.Second

// RuntimeFunc returns the plugin runtime of an index's team, and the
// team's name.
type RuntimeFunc func(ctx context.Context, index string) (*plugins.Runtime, string, error)

// BinaryFunc returns a plugin binary by digest.
type BinaryFunc func(ctx context.Context, digest string) ([]byte, error)

// Loader builds pipelines from specs, reusing the plugins already loaded
// (same binary and settings) across pipeline versions. Registry pipelines
// and pipeline files both go through it; only where binaries come from
// differs.
type Loader struct {
	runtime RuntimeFunc
	binary  BinaryFunc
	// window is the automatic fallback's window, in calls (0: no
	// fallback).
	window int
	// variantCooldown is how long a variant version that tripped the
	// fallback stays refused in variant searches.
	variantCooldown time.Duration

	mu     sync.Mutex
	loaded map[string]*plugins.Plugin
	inUse  map[string]map[string]bool // index → keys its pipeline uses
	// variants holds the health of each plugin (by key) that variant
	// searches run, across their requests: replays and evaluations have
	// the automatic fallback as live steps do (variantHealth).
	variants map[string]*health
}

// NewLoader returns a loader that runs an index's plugins in the runtime
// runtime gives and fetches binaries with binary. window is the automatic
// fallback's window, in calls, of the steps it builds (0: no fallback).
func NewLoader(runtime RuntimeFunc, binary BinaryFunc, window int) *Loader {
	return &Loader{runtime: runtime, binary: binary, window: window, variantCooldown: DefaultVariantCooldown,
		loaded: map[string]*plugins.Plugin{}, inUse: map[string]map[string]bool{}, variants: map[string]*health{}}
}

// DefaultVariantCooldown is how long a version that tripped the automatic
// fallback in variant searches stays refused in them, by default.
const DefaultVariantCooldown = time.Minute

// SetVariantCooldown sets how long a version that tripped the automatic
// fallback in variant searches stays refused in them (0: the default),
// before the loader is used.
func (l *Loader) SetVariantCooldown(d time.Duration) {
	l.variantCooldown = cmp.Or(d, DefaultVariantCooldown)
}

// variantHealth returns the fallback's record of the plugin loaded as key
// in variant searches (nil without a fallback): one for all of them, so
// that a version failing or slow in every replay or evaluation trips the
// fallback as a live step would. A record that tripped more than the
// cooldown ago is started afresh.
func (l *Loader) variantHealth(key string) *health {
	if l.window <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.variants[key]
	if h == nil || h.expired(l.variantCooldown) {
		for k, old := range l.variants { // forget the expired ones
			if old.expired(l.variantCooldown) {
				delete(l.variants, k)
			}
		}
		h = newHealth(l.window)
		h.cooldown = l.variantCooldown
		l.variants[key] = h
	}
	return h
}

// variantStep is the step of spec running p in variant searches: no
// canary or shadow, and the variants' fallback.
func (l *Loader) variantStep(p *plugins.Plugin, key string, spec api.StepSpec) Step {
	st := stepOf(p, spec)
	st.health, st.variant = l.variantHealth(key), true
	return st
}

func stepKey(kind plugins.Kind, s api.StepSpec) string {
	h := sha256.Sum256(s.Config)
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d", kind, s.Plugin, s.Digest, hex.EncodeToString(h[:8]), s.BudgetMS, s.Instances)
}

// Plugin returns the loaded plugin of a step of an index's pipeline,
// compiling and warming it the first time, and its key (see Retire).
func (l *Loader) Plugin(ctx context.Context, index string, kind plugins.Kind, s api.StepSpec) (*plugins.Plugin, string, error) {
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
	p, err = rt.Load(ctx, plugins.SpecOf(kind, api.ShortDigest(s.Digest), s), wasm)
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
// pipeline step, and returns keys with its plugins' keys appended.
func (l *Loader) step(ctx context.Context, index string, kind plugins.Kind, s api.StepSpec, keys []string) (Step, []string, error) {
	p, key, err := l.Plugin(ctx, index, kind, s)
	if err != nil {
		return Step{}, keys, err
	}
	keys = append(keys, key)
	st := stepOf(p, s)
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
		var c Step
		if c, keys, err = l.step(ctx, index, kind, s.Canary.Step, keys); err != nil {
			return Step{}, keys, fmt.Errorf("canary: %w", err)
		}
		st.Canary, st.CanaryPercent, st.StickyKey = &c, s.Canary.Percent, s.Canary.StickyKey
		if s.Canary.Interleave != nil && kind == plugins.Ranker {
			st.Interleave = &Interleaving{Live: s.Digest, Candidate: s.Canary.Step.Digest}
		}
	}
	if s.Shadow != nil {
		var sh Step
		if sh, keys, err = l.step(ctx, index, kind, s.Shadow.Step, keys); err != nil {
			return Step{}, keys, fmt.Errorf("shadow: %w", err)
		}
		st.Shadow, st.ShadowPercent = &sh, s.Shadow.Percent
	}
	return st, keys, nil
}

// Build loads every step of spec (compiling and warming new plugins before
// the pipeline exists, so the swap itself is one pointer store) and
// returns the keys of the plugins it uses (see Retire).
func (l *Loader) Build(ctx context.Context, spec *api.PipelineSpec) (*Pipeline, []string, error) {
	p := &Pipeline{}
	var keys []string
	for _, s := range spec.Rewriters {
		st, k, err := l.step(ctx, spec.Index, plugins.Rewriter, s, keys)
		if err != nil {
			return nil, nil, fmt.Errorf("rewriter %s: %w", s.Plugin, err)
		}
		keys = k
		p.Rewriters = append(p.Rewriters, st)
	}
	for _, s := range spec.Rankers {
		st, k, err := l.step(ctx, spec.Index, plugins.Ranker, s, keys)
		if err != nil {
			return nil, nil, fmt.Errorf("ranker %s: %w", s.Plugin, err)
		}
		keys = k
		p.Rankers = append(p.Rankers, st)
	}
	return p, keys, nil
}

// BuildVariant builds the pipeline of spec (steps without canaries or
// shadows) for a request of its own (a relevance evaluation's candidate).
// Its steps' failures are not the live steps': they count toward the
// variants' fallback (see Step.Observe).
func (l *Loader) BuildVariant(ctx context.Context, spec *api.PipelineSpec) (*Pipeline, error) {
	p := &Pipeline{}
	for _, k := range []struct {
		kind  plugins.Kind
		specs []api.StepSpec
		out   *[]Step
	}{{plugins.Rewriter, spec.Rewriters, &p.Rewriters}, {plugins.Ranker, spec.Rankers, &p.Rankers}} {
		for _, s := range k.specs {
			plugin, key, err := l.Plugin(ctx, spec.Index, k.kind, s)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", k.kind, s.Plugin, err)
			}
			*k.out = append(*k.out, l.variantStep(plugin, key, s))
		}
	}
	return p, nil
}

// Variant returns p (nil: no pipeline) with plugin name's live step of
// kind running the version of spec instead, with that version's fields
// and rerank depth and no canary or shadow, or, when the plugin is not in
// p, with the version added as the last step of its kind, as activating
// it would. Its failures are not the live version's: they count toward
// the variants' fallback (see Step.Observe).
func (l *Loader) Variant(ctx context.Context, index string, p *Pipeline, kind plugins.Kind, name string, spec api.StepSpec) (*Pipeline, error) {
	if p == nil {
		p = &Pipeline{}
	}
	out := &Pipeline{Rewriters: slices.Clone(p.Rewriters), Rankers: slices.Clone(p.Rankers)}
	steps := &out.Rewriters
	if kind == plugins.Ranker {
		steps = &out.Rankers
	}
	plugin, key, err := l.Plugin(ctx, index, kind, spec)
	if err != nil {
		return nil, err
	}
	for i := range *steps {
		if (*steps)[i].Plugin.Spec().Name != name {
			continue
		}
		st := (*steps)[i]
		vs := l.variantStep(plugin, key, spec)
		// The live step's place and policy, the version's own settings.
		st.Plugin, st.Canary, st.Shadow, st.Interleave = plugin, nil, nil, nil
		st.health, st.variant = vs.health, true
		st.Fields, st.RerankDepth, st.LatencyBudget = spec.Fields, spec.RerankDepth, vs.LatencyBudget
		(*steps)[i] = st
		return out, nil
	}
	*steps = append(*steps, l.variantStep(plugin, key, spec))
	return out, nil
}

// Retire records the plugins (keys, from Build) an index's pipeline now
// uses (nil: it has none) and closes, after a grace period, those no
// pipeline uses any more.
func (l *Loader) Retire(index string, keys []string) {
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
	time.AfterFunc(stopAfter, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k, p := range l.loaded {
			if !l.used(k) {
				p.StopCalls()
			}
		}
	})
	time.AfterFunc(retireAfter, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k, p := range l.loaded {
			if !l.used(k) {
				delete(l.loaded, k)
				p.Close(context.Background())
			}
		}
	})
}

// used reports whether a pipeline uses the plugin loaded as key. l.mu is
// held.
func (l *Loader) used(key string) bool {
	for _, set := range l.inUse {
		if set[key] {
			return true
		}
	}
	return false
}
