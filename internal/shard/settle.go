package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
// in-memory segment is persisted, then asks scorch for a forced merge and
// waits for it. Tests use it to show that scores do not depend on how
// segments are merged.
func (r *Replica) ForceMerge(ctx context.Context) error {
	idx, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.mu.RUnlock()
	adv, err := idx.Advanced()
	if err != nil {
		return fmt.Errorf("force merge shard %d: %w", r.cfg.Shard, err)
	}
	si, ok := adv.(*statsIndex)
	if !ok {
		return fmt.Errorf("force merge shard %d: index type %T", r.cfg.Shard, adv)
	}
	sc, ok := si.Index.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("force merge shard %d: index type %T", r.cfg.Shard, si.Index)
	}
	for {
		m, _ := idx.StatsMap()["index"].(map[string]any)
		if mem, _ := m["num_root_memorysegments"].(uint64); mem == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("force merge shard %d: waiting for segments to persist: %w", r.cfg.Shard, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := sc.ForceMerge(ctx, nil); err != nil {
		return fmt.Errorf("force merge shard %d: %w", r.cfg.Shard, err)
	}
	return nil
}
