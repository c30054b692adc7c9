package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestInternalSearchesNotTraffic: the searches Quarry makes for itself
// (a ranker's validation asks the index for candidates for each sample)
// are left out of the index's traffic report and its recorded queries;
// a user's search is in both.
func TestInternalSearchesNotTraffic(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startConfig(t, allRoles(Config{Broker: &broker.Config{RecordPercent: 100}}))
	c := n.Client()
	loadCatalog(t, n, "traffic", 1, catalogNDJSON(t, 50))
	step := api.StepSpec{Config: json.RawMessage(`{"weights":{"price":-1}}`), Fields: []string{"price"}, RerankDepth: 10, BudgetMS: 2000}
	if _, err := c.PushPlugin(ctx, "traffic", "ltr", wasmtest.GoPlugin(t, "../examples/plugins/ltr"), client.PushOptions{Kind: "ranker", Step: step,
		Samples: []api.SearchRequest{{Q: "validation sample"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx, "traffic", &api.SearchRequest{Q: "user query"}); err != nil {
		t.Fatal(err)
	}
	testwait.UntilErr(t, 10*time.Second, "the user's query alone recorded and reported", func() error {
		recorded, err := c.RecordedQueries(ctx, "traffic", 100)
		if err != nil {
			return err
		}
		rep, err := c.QueryReport(ctx, "traffic")
		if err != nil {
			return err
		}
		if len(recorded) != 1 || rep.Searches != 1 {
			return &api.Error{Code: api.CodeConflict, Message: "recorded " + string(mustJSON(recorded)) + ", report " + string(mustJSON(rep))}
		}
		return nil
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
