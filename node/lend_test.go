package node

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/testwait"
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

// TestLentReplicasKeepSearcherLimits: in one process (quarry serve) the
// searcher serves the indexer's replicas, and holds them to its own
// --max-points-in-time and --column-bytes, not to the shard's defaults:
// with a cap of one point in time a second is refused, and with columns
// off (negative) searches asking for fields make none. With columns on
// (the other node, the defaults) the same searches are served from them.
func TestLentReplicasKeepSearcherLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		cfg     *searcher.Config
		columns bool
	}{
		{"limits", &searcher.Config{MaxPITs: 1, ColumnBytes: -1}, false},
		{"defaults", &searcher.Config{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			n := startConfig(t, allRoles(Config{Searcher: c.cfg}))
			cl := n.Client()
			if _, err := cl.CreateIndexDef(ctx, api.IndexDefinition{Name: "lent", Shards: 1}); err != nil {
				t.Fatal(err)
			}
			mustBulk(t, cl, "lent", ndjson(50, "t"))
			pit := func() error {
				_, err := cl.Search(ctx, "lent", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: 1, PIT: &api.PITRequest{KeepAlive: "1m"}})
				return err
			}
			if err := pit(); err != nil {
				t.Fatal(err)
			}
			if err := pit(); errors.Is(err, api.ErrOverloaded) != (c.cfg.MaxPITs == 1) {
				t.Fatalf("a second point in time: %v", err)
			}
			search := func() {
				t.Helper()
				if _, err := cl.Search(ctx, "lent", &api.SearchRequest{Q: "spicy", Size: 20, Fields: []string{"text"}}); err != nil {
					t.Fatal(err)
				}
			}
			search() // asks for the field: its column is made in the background
			served := func() (bytes, hits float64) {
				fams, err := n.Metrics.Gather()
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fams {
					for _, m := range f.GetMetric() {
						switch f.GetName() {
						case "quarry_searcher_shard_column_bytes":
							bytes += m.GetGauge().GetValue()
						case "quarry_searcher_shard_column_hits_total":
							hits += m.GetCounter().GetValue()
						}
					}
				}
				return bytes, hits
			}
			if c.columns {
				testwait.Until(t, 10*time.Second, "hits served from columns", func() bool {
					search()
					_, hits := served()
					return hits > 0
				})
				return
			}
			time.Sleep(time.Second) // five rounds of the background's
			search()
			if bytes, hits := served(); bytes != 0 || hits != 0 {
				t.Fatalf("columns off, yet %g bytes of columns and %g hits served from them", bytes, hits)
			}
		})
	}
}
