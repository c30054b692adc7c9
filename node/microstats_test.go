package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// `nats micro stats quarry` tells the truth: the search endpoint's own
// figures count every request from its arrival to its answer, the error
// answers included (micro.AddService's would stop when a handler hands a
// request to a worker, at once, and count no error the worker sends).
// `nats micro info` and `ping` answer too.
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
	var stats micro.Stats
	request(t, n, "$SRV.STATS."+subject.ServiceName, &stats)
	if stats.Type != micro.StatsResponseType || stats.Name != subject.ServiceName || stats.ID == "" || len(stats.Endpoints) != 1 || stats.Endpoints[0].Name != "search" {
		t.Fatalf("stats: %+v", stats)
	}
	e := stats.Endpoints[0]
	// noodleIndex's own searches count too: at least the 6 above (and,
	// in the long tier, its searches while the index is not yet served
	// may have failed too: at least the one above).
	if e.NumRequests < 6 || e.NumErrors < 1 || e.ProcessingTime <= 0 || e.AverageProcessingTime <= 0 ||
		!strings.HasPrefix(e.LastError, "404:") || !strings.Contains(e.LastError, `"nope"`) {
		t.Fatalf("endpoint stats: %+v", e)
	}
	if e.AverageProcessingTime < 10*time.Microsecond {
		t.Errorf("average processing time %s: a search's own time is not counted", e.AverageProcessingTime)
	}
	// The admin service answers from its teams' lanes, after the
	// handler has returned: its figures count that too.
	if _, err := c.Plugins(ctx, "nope"); err == nil {
		t.Fatal("the plugins of an unknown index listed")
	}
	var admin micro.Stats
	request(t, n, "$SRV.STATS."+subject.AdminService, &admin)
	var ls *micro.EndpointStats
	for _, e := range admin.Endpoints {
		if e.Name == "plugin-ls" {
			ls = e
		}
	}
	if ls == nil || ls.NumRequests < 1 || ls.NumErrors < 1 || ls.ProcessingTime <= 0 || !strings.HasPrefix(ls.LastError, "404:") {
		t.Fatalf("admin service's plugin-ls stats: %+v", ls)
	}
	var info micro.Info
	request(t, n, "$SRV.INFO."+subject.ServiceName+"."+stats.ID, &info)
	if info.Type != micro.InfoResponseType || len(info.Endpoints) != 1 || info.Endpoints[0].Subject != subject.SearchPrefix+".*" || info.Description == "" {
		t.Fatalf("info: %+v", info)
	}
	var ping micro.Ping
	request(t, n, "$SRV.PING", &ping)
	if ping.Type != micro.PingResponseType || ping.Name == "" {
		t.Fatalf("ping: %+v", ping)
	}
}

// request asks subj and decodes the first answer into v.
func request(t *testing.T, n *Node, subj string, v any) {
	t.Helper()
	msg, err := n.Conn().Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subj, err)
	}
	if err := json.Unmarshal(msg.Data, v); err != nil {
		t.Fatalf("%s: %s: %v", subj, msg.Data, err)
	}
}
