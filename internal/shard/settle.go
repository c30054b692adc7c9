package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// ErrNoSegmentStats reports an index whose statistics do not count scorch
// segments (not a scorch index): there is nothing to wait for.
var ErrNoSegmentStats = errors.New("no scorch segment statistics")

// Settle waits until scorch has persisted and merged the segments of every
// index: no in-memory segment, and the number of file segments the same
// over five polls every apart. Benchmarks call it so that background
// merging does not run while they measure. It returns the file segment
// counts it saw last (one per index), and ctx's error if it gave up.
func Settle(ctx context.Context, every time.Duration, idxs ...bleve.Index) (state string, err error) {
	last, steady := "", 0
	for {
		var b strings.Builder
		busy := false
		for _, idx := range idxs {
			m, _ := idx.StatsMap()["index"].(map[string]any)
			mem, ok1 := m["num_root_memorysegments"].(uint64)
			file, ok2 := m["num_root_filesegments"].(uint64)
			if !ok1 || !ok2 {
				return "", ErrNoSegmentStats
			}
			busy = busy || mem > 0
			fmt.Fprintf(&b, "%d ", file)
		}
		state = strings.TrimSpace(b.String())
		if !busy && state == last {
			if steady++; steady == 5 {
				return state, nil
			}
		} else {
			steady = 0
		}
		last = state
		select {
		case <-ctx.Done():
			return state, ctx.Err()
		case <-time.After(every):
		}
	}
}

// ForceMerge merges the replica's index into as few segments as scorch
// will (one, unless an update arrives meanwhile): it waits until every
// in-memory segment is persisted, then merges the files. Tests use it to
// show that scores do not depend on how segments are merged.
func (r *Replica) ForceMerge(ctx context.Context) error {
	sc, err := r.scorch()
	if err != nil {
		return err
	}
	if err := persisted(ctx, sc); err != nil {
		return fmt.Errorf("force merge shard %d: waiting for segments to persist: %w", r.cfg.Shard, err)
	}
	return r.merge(ctx, sc)
}

// Compact merges the replica's segments into one (scorch's forced merge)
// and waits for it. Every search visits every segment, so a shard of one
// segment answers fastest: the indexer compacts its replicas before the
// snapshot a bulk load ends with. Each round waits, five persister naps
// at most, for fresh segments to be persisted, then merges the files; a
// segment still in memory after it (scorch can persist one more after
// the merge began) takes another round, three at most, unless updates
// arrived meanwhile: under a steady stream of updates there is always a
// fresh segment, left to the persister. Searches and updates go on
// meanwhile; closing the replica ends the merge.
func (r *Replica) Compact(ctx context.Context) error {
	sc, err := r.scorch()
	if err != nil {
		return err
	}
	seq := r.Seq()
	for range 3 {
		wctx, cancel := context.WithTimeout(ctx, 5*max(r.cfg.Writes.PersistNap, 10*time.Millisecond))
		persisted(wctx, sc) // what is still in memory after the wait stays there
		cancel()
		if err := r.merge(ctx, sc); err != nil {
			return err
		}
		if files, mem := rootSegments(sc); files+mem <= 1 || r.Seq() != seq {
			break
		}
	}
	return nil
}

// rootSegments returns the file and in-memory segments of sc's root now,
// counted in its current snapshot (a reference taken and given back; no
// StatsMap, which builds every statistic scorch has). Not from scorch's
// TotFileSegmentsAtRoot and TotMemorySegmentsAtRoot: each introduction
// sets those from the root before it, so they lag by one batch and count
// segments just dropped, and folding (fold.go) decides on the count.
func rootSegments(sc *scorch.Scorch) (files, memory uint64) {
	rd, err := sc.Reader()
	if err != nil {
		return 0, 0
	}
	defer rd.Close()
	snap, ok := rd.(*scorch.IndexSnapshot)
	if !ok {
		return 0, 0
	}
	for _, ss := range snap.Segments() {
		if _, persisted := ss.Segment().(segment.PersistedSegment); persisted {
			files++
		} else {
			memory++
		}
	}
	return files, memory
}

// persisted waits until sc holds no in-memory segment, or ctx ends.
func persisted(ctx context.Context, sc *scorch.Scorch) error {
	for {
		if _, mem := rootSegments(sc); mem == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// scorch returns the replica's scorch index, taken under the lock and
// used without it: a merge must not hold up a generation swap, which
// would hold up every search behind it.
func (r *Replica) scorch() (*scorch.Scorch, error) {
	idx, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	adv, err := idx.Advanced()
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", r.cfg.Shard, err)
	}
	si, ok := adv.(*statsIndex)
	if !ok {
		return nil, fmt.Errorf("shard %d: index type %T", r.cfg.Shard, adv)
	}
	sc, ok := si.Index.(*scorch.Scorch)
	if !ok {
		return nil, fmt.Errorf("shard %d: index type %T", r.cfg.Shard, si.Index)
	}
	return sc, nil
}

func (r *Replica) merge(ctx context.Context, sc *scorch.Scorch) error {
	if err := sc.ForceMerge(ctx, nil); err != nil {
		return fmt.Errorf("merge shard %d: %w", r.cfg.Shard, err)
	}
	return nil
}
