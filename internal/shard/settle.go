package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
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
