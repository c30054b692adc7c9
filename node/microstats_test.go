package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/subject"
)

// `nats micro stats quarry` tells the truth: the search endpoint's data
// counts every request from its arrival to its reply, and the error
// replies the broker's goroutines send (micro's own figures stop when the
// handler hands a request on, at once).
func TestMicroStats(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	noodleIndex(t, c, "stats", "s")
	for range 5 {
		if _, err := c.Search(ctx, "stats", &api.SearchRequest{Q: "noodles"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Search(ctx, "nope", &api.SearchRequest{Q: "noodles"}); err == nil {
		t.Fatal("a search of an unknown index succeeded")
	}
	msg, err := n.Conn().Request("$SRV.STATS."+subject.ServiceName, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Endpoints) != 1 || stats.Endpoints[0].Name != "search" {
		t.Fatalf("endpoints: %+v", stats.Endpoints)
	}
	var d broker.EndpointData
	if err := json.Unmarshal(stats.Endpoints[0].Data, &d); err != nil {
		t.Fatalf("endpoint data %s: %v", stats.Endpoints[0].Data, err)
	}
	// noodleIndex's own searches count too: at least the 6 above.
	if d.NumRequests < 6 || d.NumErrors < 1 || d.ProcessingTime <= 0 || d.AverageProcessingTime <= 0 ||
		!strings.HasPrefix(d.LastError, "404:") || !strings.Contains(d.LastError, `"nope"`) {
		t.Fatalf("endpoint data: %+v", d)
	}
	if d.AverageProcessingTime < 10*time.Microsecond {
		t.Errorf("average processing time %s: a search's own time is not counted", d.AverageProcessingTime)
	}
}
