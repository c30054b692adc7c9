package pipeline

import (
	"maps"
	"sync"
)

// Live holds each index's live pipeline, and the registry revision it
// was swapped in from. Swapping one in is one map store: requests already
// running finish with the pipeline they started with. The zero Live holds
// none.
type Live struct {
	mu        sync.RWMutex
	pipelines map[string]*Pipeline
	revisions map[string]uint64
}

// Get returns index's live pipeline (nil: none).
func (l *Live) Get(index string) *Pipeline {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pipelines[index]
}

// Set makes p index's live pipeline (nil: none).
func (l *Live) Set(index string, p *Pipeline) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set(index, p)
}

// set is Set with l.mu held.
func (l *Live) set(index string, p *Pipeline) {
	if l.pipelines == nil {
		l.pipelines = map[string]*Pipeline{}
	}
	if p == nil {
		delete(l.pipelines, index)
		return
	}
	l.pipelines[index] = p
}

// Swap makes p index's live pipeline (nil: none), swapped in from the
// registry's revision rev (an index whose pipeline was deleted keeps the
// deletion's revision): both at once, so that Current never pairs a
// pipeline with another's revision.
func (l *Live) Swap(index string, p *Pipeline, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set(index, p)
	if l.revisions == nil {
		l.revisions = map[string]uint64{}
	}
	l.revisions[index] = rev
}

// Current returns index's live pipeline (nil: none) and the registry
// revision it was swapped in from (0: none recorded).
func (l *Live) Current(index string) (*Pipeline, uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pipelines[index], l.revisions[index]
}

// Revisions returns a copy of the recorded revisions, by index (nil if
// none was recorded).
func (l *Live) Revisions() map[string]uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return maps.Clone(l.revisions)
}

// All yields each index with a live pipeline, and the pipeline, holding
// the Live's read lock: yield must not call Set or Swap.
func (l *Live) All(yield func(index string, p *Pipeline) bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for index, p := range l.pipelines {
		if !yield(index, p) {
			return
		}
	}
}
