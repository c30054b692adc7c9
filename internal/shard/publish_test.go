package shard

import (
	"context"
	"testing"
	"time"
)

// An update that arrives while the replica is being published is applied
// while the copy runs, not after it: Publish holds the apply lock only to
// take the sequence and the index's root together. Here the copy waits
// until an update sent after that point is applied; the snapshot still
// holds exactly what its sequence says.
func TestPublishDoesNotHoldUpdates(t *testing.T) {
	r, store := followReplica(t, WriteOptions{ApplyInterval: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := publishDocs(t, store, 0, 500)
	if err := r.WaitSeq(ctx, last); err != nil {
		t.Fatal(err)
	}
	var during uint64
	beforeCopy = func() {
		during = publishDocs(t, store, 500, 1)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if err := r.WaitSeq(wctx, during); err != nil {
			t.Errorf("an update sent while a copy was about to start was not applied: %v", err)
		}
	}
	t.Cleanup(func() { beforeCopy = nil })
	snap, err := r.Publish(ctx, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != last || snap.Docs != 500 {
		t.Errorf("snapshot at sequence %d with %d documents, want %d and 500 (the update applied during the copy is not in it)", snap.Seq, snap.Docs, last)
	}
	if r.Seq() < during {
		t.Errorf("replica at %d, want %d", r.Seq(), during)
	}
}
