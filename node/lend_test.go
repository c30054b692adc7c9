package node

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/searcher"
)

// TestSearcherServesIndexerReplicas: with an indexer and a searcher in one
// node, the searcher serves the indexer's replicas (every update indexed
// once), unless told to keep its own; either way, what it serves follows updates, snapshots and an
// index deleted and created again under the same name.
func TestSearcherServesIndexerReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		separate bool
		lent     bool
	}{
		{name: "lent", lent: true},
		{name: "separate", separate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			n := startConfig(t, Config{DataDir: dir, SeparateReplicas: tc.separate,
				Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
			c := n.Client()
			const index = "lend"
			checkServed := func(t *testing.T) {
				t.Helper()
				stats := n.Searcher.Stats()
				if len(stats) != 2 {
					t.Fatalf("searcher serves %d shards, want 2: %+v", len(stats), stats)
				}
				for _, st := range stats {
					if st.Lent != tc.lent {
						t.Errorf("shard %d: lent %v, want %v", st.Shard, st.Lent, tc.lent)
					}
				}
				// A lent replica is served where the indexer keeps it:
				// the searcher holds no index files of its own.
				files := 0
				filepath.WalkDir(filepath.Join(dir, "searcher", "shards"), func(_ string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						files++
					}
					return nil
				})
				if tc.lent && files != 0 {
					t.Errorf("searcher holds %d files of its own, want none", files)
				}
				if !tc.lent && files == 0 {
					t.Error("searcher holds no replica of its own")
				}
			}

			if _, err := c.CreateIndex(ctx, index, 2, nil); err != nil {
				t.Fatal(err)
			}
			mustBulk(t, c, index, ndjson(30, "a"))
			waitTotal(t, c, index, "noodles", 10)
			checkServed(t)

			// An update is searchable at once.
			if _, err := c.Put(ctx, index, []byte(`{"id":"fresh","text":"noodles and dumplings"}`)); err != nil {
				t.Fatal(err)
			}
			waitTotal(t, c, index, "dumplings", 1)

			// A snapshot: the searcher reports the generation it holds.
			snap, err := c.Snapshot(ctx, index, 0)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				for _, st := range n.Searcher.Stats() {
					if st.Generation != snap.Generation {
						return false
					}
				}
				return true
			})
			waitTotal(t, c, index, "noodles", 11)

			// Deleted and created again: only the new documents.
			if err := c.DeleteIndex(ctx, index); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateIndex(ctx, index, 2, nil); err != nil {
				t.Fatal(err)
			}
			mustBulk(t, c, index, ndjson(6, "b"))
			waitTotal(t, c, index, "noodles", 2)
			waitTotal(t, c, index, "dumplings", 0)
			checkServed(t)

			// Restarted on the same data directory: served at once
			// from the local copies, at the generation they hold.
			if snap, err = c.Snapshot(ctx, index, 0); err != nil {
				t.Fatal(err)
			}
			n.Close()
			n = startConfig(t, Config{DataDir: dir, SeparateReplicas: tc.separate,
				Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
			c = n.Client()
			waitTotal(t, c, index, "noodles", 2)
			checkServed(t)
			for _, st := range n.Searcher.Stats() {
				if st.Generation != snap.Generation {
					t.Errorf("after the restart, shard %d at generation %d, want %d", st.Shard, st.Generation, snap.Generation)
				}
			}
		})
	}
}

// TestIndexerLend: the indexer lends the replicas of the incarnation of an
// index it holds, and refuses (shard.ErrNotLent) what it does not hold.
func TestIndexerLend(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}})
	def, err := n.Client().CreateIndex(ctx, "lend", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := n.Indexer.Lend(ctx, def, 1)
	if err != nil || r == nil {
		t.Fatalf("lend shard 1: %v, %v", r, err)
	}
	older := def
	older.Created = def.Created.Add(-time.Second)
	other := def
	other.Name = "other"
	for _, tc := range []struct {
		name  string
		def   api.IndexDefinition
		shard int
	}{
		{"no such shard", def, 2},
		{"an older incarnation", older, 0},
	} {
		if _, err := n.Indexer.Lend(ctx, tc.def, tc.shard); !errors.Is(err, shard.ErrNotLent) {
			t.Errorf("%s: %v, want ErrNotLent", tc.name, err)
		}
	}
	// An index not (yet) loaded: Lend waits for it, until its context ends.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if _, err := n.Indexer.Lend(short, other, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("index not loaded: %v, want the deadline", err)
	}

	only := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1, Index: "other"}})
	if _, err := only.Indexer.Lend(ctx, def, 0); !errors.Is(err, shard.ErrNotLent) {
		t.Errorf("indexer of another index: %v, want ErrNotLent", err)
	}
}
