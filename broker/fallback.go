package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// health watches one step's recent calls. When the share of failures over
// the window passes the broker's threshold, a fail-open step is taken out
// (skipped, and said so) until a new pipeline version replaces it; the
// event is recorded in the quarry-plugin-events bucket.
type health struct {
	mu       sync.Mutex
	window   []bool // true: the call failed
	next, n  int
	failures int
	disabled atomic.Bool
}

func newHealth(window int) *health { return &health{window: make([]bool, window)} }

// record adds a call's outcome and reports whether this call tripped the
// fallback (once).
func (h *health) record(failed bool, rate float64, minCalls int) (tripped bool, failures, calls int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == len(h.window) && h.window[h.next] {
		h.failures--
	}
	h.window[h.next] = failed
	if failed {
		h.failures++
	}
	h.next = (h.next + 1) % len(h.window)
	h.n = min(h.n+1, len(h.window))
	if h.n >= minCalls && float64(h.failures) > rate*float64(h.n) && !h.disabled.Load() {
		h.disabled.Store(true)
		return true, h.failures, h.n
	}
	return false, h.failures, h.n
}

// observe records a step's call and, if it trips the fallback, the event.
func (b *Broker) observe(index string, s *Step, err error) {
	if s.health == nil || s.Policy != FailOpen {
		return
	}
	tripped, failures, calls := s.health.record(err != nil, b.cfg.FallbackErrorRate, b.cfg.FallbackMinCalls)
	if !tripped {
		return
	}
	spec := s.Plugin.Spec()
	ev := api.PluginEvent{Index: index, Plugin: spec.Name, Version: spec.Version, Time: time.Now().UTC(), Event: "taken out",
		Reason: fmt.Sprintf("%d of its last %d calls failed (threshold %.0f%%); last error: %v", failures, calls, 100*b.cfg.FallbackErrorRate, err),
		Broker: b.shadows.id}
	b.cfg.Logger.Warn("plugin taken out of the pipeline", "index", index, "plugin", spec.Name, "version", spec.Version, "reason", ev.Reason)
	go func() {
		raw, _ := json.Marshal(ev)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		key := index + "." + spec.Name + "." + strconv.FormatInt(ev.Time.UnixNano(), 10)
		if _, err := b.store.Events.Put(ctx, key, raw); err != nil {
			b.cfg.Logger.Warn("record plugin event", "err", err)
		}
	}()
}

// disabled reports whether the fallback took a step out.
func (s *Step) disabled() bool { return s.health != nil && s.health.disabled.Load() }
