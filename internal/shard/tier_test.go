package shard

import (
	"context"
	"fmt"
	"testing"
	"time"
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
	// Merges run in the background: wait until neither has changed its
	// files for a while.
	settled := func(r *Replica) uint64 {
		t.Helper()
		last, since := uint64(0), time.Now()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			files, _ := r.Segments()
			if files != last {
				last, since = files, time.Now()
			} else if time.Since(since) > 500*time.Millisecond {
				return files
			}
		}
		t.Fatal("the segments never settled")
		return 0
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
