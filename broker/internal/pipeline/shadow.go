package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// MaxShadowCalls bounds shadow calls running at once, ranker calls and
// rewriter shadow searches alike: mirrored work is dropped rather than
// queued when the broker is busy.
const MaxShadowCalls = 4

// ShadowTimeout bounds one mirrored call, or one rewriter's shadow search
// (which also keeps to the query's own timeout).
const ShadowTimeout = 5 * time.Second

// Shadows runs the shadows of a broker's steps in the background, at
// most MaxShadowCalls at once, and sums their comparisons with the live
// steps in a tally per <index>.<plugin> (api.ShadowTally), which the
// broker publishes to the shadow bucket, where the admin API sums every
// broker's.
type Shadows struct {
	sem   chan struct{}
	mu    sync.Mutex
	tally map[string]*api.ShadowTally // <index>.<plugin>
	dirty bool
}

// NewShadows returns an empty set of tallies with no shadow running.
func NewShadows() *Shadows {
	return &Shadows{sem: make(chan struct{}, MaxShadowCalls), tally: map[string]*api.ShadowTally{}}
}

// Run runs f in the background with a shadow's time bound
// (ShadowTimeout), if fewer than MaxShadowCalls shadows are running;
// otherwise it drops it (mirrored work is never queued) and reports
// false.
func (sh *Shadows) Run(f func(ctx context.Context)) bool {
	select {
	case sh.sem <- struct{}{}:
	default:
		return false
	}
	go func() {
		defer func() { <-sh.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), ShadowTimeout)
		defer cancel()
		f(ctx)
	}()
	return true
}

// Running is how many shadows Run is running now.
func (sh *Shadows) Running() int { return len(sh.sem) }

// ShadowResult is one mirrored query's comparison.
type ShadowResult struct {
	LiveTook, ShadowTook time.Duration
	LiveErr, ShadowErr   bool
	// Compared: both succeeded, and Overlap and Rho are set.
	Compared     bool
	Overlap, Rho float64
}

// Add sums one comparison into the tally of key (<index>.<plugin>).
func (sh *Shadows) Add(key string, r ShadowResult) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.tally[key]
	if t == nil {
		t = &api.ShadowTally{}
		sh.tally[key] = t
	}
	sh.dirty = true
	t.Calls++
	t.LiveNS += r.LiveTook.Nanoseconds()
	t.ShadowNS += r.ShadowTook.Nanoseconds()
	if r.LiveErr {
		t.LiveErrors++
	}
	if r.ShadowErr {
		t.ShadowErrors++
	}
	if r.Compared {
		t.Queries++
		t.OverlapSum += r.Overlap
		t.RhoSum += r.Rho
	}
}

// Tally returns a copy of key's tally (zero if none).
func (sh *Shadows) Tally(key string) api.ShadowTally {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if t := sh.tally[key]; t != nil {
		return *t
	}
	return api.ShadowTally{}
}

// Changed returns a copy of every tally, by key, if one changed since
// the last call (nil if none did).
func (sh *Shadows) Changed() map[string]api.ShadowTally {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.dirty {
		return nil
	}
	sh.dirty = false
	out := make(map[string]api.ShadowTally, len(sh.tally))
	for k, t := range sh.tally {
		out[k] = *t
	}
	return out
}
