package shard

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/quarrysearch/quarry/internal/testwait"
)

// TestSegmentsPerTier: batches of updates, each persisted as a small file
// segment of its own. The merge planner lets a shard keep
// SegmentsPerTier segments of about one size before it merges them, and
// every search visits each: with 2 a shard settles on a few files, with
// bleve's 10 on many more.
func TestSegmentsPerTier(t *testing.T) {
	opts := func(perTier int) WriteOptions {
		return WriteOptions{ApplyInterval: -1, PersistNap: -1, MergeFloor: 10, SegmentsPerTier: perTier, FreshSegments: -1}
	}
	tight, store := followReplica(t, opts(2))
	loose := followStore(t, store, opts(10))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rounds, per = 30, 20
	for i := range rounds {
		var seq uint64
		for j := range per {
			id := i*per + j
			seq = publishOne(t, store, fmt.Sprintf("d%d", id), fmt.Sprintf(`{"name":"dish %d","description":"w%d w%d"}`, id, id%97, id%89))
		}
		for _, r := range []*Replica{tight, loose} {
			if err := r.WaitSeq(ctx, seq); err != nil {
				t.Fatal(err)
			}
		}
		waitPersisted(t, tight, loose)
	}
	// Merges run in the background: wait until scorch's merger and
	// persister have both worked on the current root (what bleve reports
	// as index_bgthreads_active false), and count the files then.
	settled := func(r *Replica) uint64 {
		t.Helper()
		sc, err := r.scorch()
		if err != nil {
			t.Fatal(err)
		}
		st := sc.Stats().(*scorch.Stats)
		testwait.Until(t, 20*time.Second, "the merges done", func() bool {
			root := atomic.LoadUint64(&st.CurRootEpoch)
			merged, persisted := atomic.LoadUint64(&st.LastMergedEpoch), atomic.LoadUint64(&st.LastPersistedEpoch)
			return merged == root && persisted == root && atomic.LoadUint64(&st.CurRootEpoch) == root
		})
		files, _ := r.Segments()
		return files
	}
	tf, lf := settled(tight), settled(loose)
	t.Logf("file segments after %d batches of updates: %d with 2 a tier, %d with 10", rounds, tf, lf)
	// Measured (counted from the snapshot, under -race): 1-5 with 2 a
	// tier, 8-14 with 10.
	if tf > 6 || lf <= tf {
		t.Errorf("file segments: %d with 2 a tier (want at most 6), %d with 10 (want more)", tf, lf)
	}
	for _, r := range []*Replica{tight, loose} {
		if n, err := r.DocCount(); err != nil || n != rounds*per {
			t.Fatalf("documents: %d, %v; want %d", n, err, rounds*per)
		}
	}
}
