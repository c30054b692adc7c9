package node

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

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
