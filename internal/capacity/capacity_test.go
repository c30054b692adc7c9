package capacity

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// run is one measurement the model is built from: `quarry bench --setups
// quarry --loops closed --duration 10s --check 0 --stats-cache -1
// --stats-cache-terms -1 --docs DOCS --shards SHARDS --profile-dir DIR`
// (the second flag is newer than the figures, which had no term cache) on
// the 2-core machine, its CPU per query (the report's cpu/query) and each
// role's share of the CPU profile (go run ./internal/capacity/attribute
// DIR/quarry-closed.cpu.pprof).
type run struct {
	docs, shards int
	cpuMS        float64 // per query
	// shares of the profile's samples, in percent
	searcher, broker, nats, client, other, gc float64
}

var runs = []run{
	{20000, 4, 7.90, 70.1, 7.6, 2.7, 1.3, 13.5, 4.8},
	{20000, 1, 3.29, 71.7, 9.6, 1.5, 2.6, 9.6, 5.1},
	{80000, 4, 20.2, 77.1, 2.6, 1.4, 0.5, 12.3, 6.1},
	{80000, 1, 7.40, 84.9, 5.2, 0.8, 1.6, 4.8, 2.8},
}

// matchShare is the share of the catalogue the bench's kind of query
// matches: the mean total of ten such queries on the demo index (20,000
// items), 1,837 (docs/scaling.md).
const matchShare = 0.092

// raw is a run's CPU per query for one role, in seconds, before the
// unattributed share is spread.
func (r run) raw(share float64) float64 { return r.cpuMS * 1e-3 * share / 100 }

func (r run) overhead() float64 {
	return (r.other + r.gc) / (r.searcher + r.broker + r.nats + r.client)
}

// fit builds the costs from the runs, as Measured was built.
func fit(t *testing.T) Costs {
	t.Helper()
	var c Costs
	line := func(shards int) (fixed, perMatch float64) {
		var pts [][2]float64 // matches per shard, searcher CPU per shard
		for _, r := range runs {
			if r.shards == shards {
				n := float64(r.docs) / float64(r.shards)
				pts = append(pts, [2]float64{matchShare * n, r.raw(r.searcher) / float64(r.shards)})
			}
		}
		if len(pts) != 2 {
			t.Fatalf("%d runs of %d shards, want 2", len(pts), shards)
		}
		perMatch = (pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0])
		return pts[0][1] - perMatch*pts[0][0], perMatch
	}
	c.ShardFixed, c.ShardPerMatch = line(4)
	c.SingleShardFixed, c.SingleShardPerMatch = line(1)
	// The broker: least squares of its CPU on the shard count.
	var sx, sy, sxx, sxy, n float64
	for _, r := range runs {
		x, y := float64(r.shards), r.raw(r.broker)
		sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
	}
	c.BrokerPerShard = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	c.BrokerFixed = (sy - c.BrokerPerShard*sx) / n
	for _, r := range runs {
		c.NATSPerMessage += r.raw(r.nats) / float64(MessagesPerQuery(r.shards)) / float64(len(runs))
		c.ClientPerQuery += r.raw(r.client) / float64(len(runs))
		c.Overhead += r.overhead() / float64(len(runs))
	}
	return c
}

// TestModelFitsMeasurements: Measured is what the runs give, and the
// model built from them reproduces each run's CPU per query.
func TestModelFitsMeasurements(t *testing.T) {
	got := fit(t)
	for _, f := range []struct {
		name      string
		fit, have float64
	}{
		{"ShardFixed", got.ShardFixed, Measured.ShardFixed},
		{"ShardPerMatch", got.ShardPerMatch, Measured.ShardPerMatch},
		{"SingleShardFixed", got.SingleShardFixed, Measured.SingleShardFixed},
		{"SingleShardPerMatch", got.SingleShardPerMatch, Measured.SingleShardPerMatch},
		{"BrokerFixed", got.BrokerFixed, Measured.BrokerFixed},
		{"BrokerPerShard", got.BrokerPerShard, Measured.BrokerPerShard},
		{"NATSPerMessage", got.NATSPerMessage, Measured.NATSPerMessage},
		{"ClientPerQuery", got.ClientPerQuery, Measured.ClientPerQuery},
		{"Overhead", got.Overhead, Measured.Overhead},
	} {
		if math.Abs(f.fit-f.have) > 0.02*math.Abs(f.fit) {
			t.Errorf("%s: the runs give %.4g, Measured says %.4g", f.name, f.fit, f.have)
		}
	}
	for _, r := range runs {
		predicted := Measured.SingleMachine(r.shards, float64(r.docs)/float64(r.shards), matchShare, 0)
		if e := predicted/(r.cpuMS*1e-3) - 1; math.Abs(e) > 0.2 {
			t.Errorf("%d docs in %d shards: the model says %.2f ms a query, measured %.2f ms (%+.0f%%)", r.docs, r.shards, predicted*1e3, r.cpuMS, 100*e)
		}
	}
}

// example is docs/scaling.md's worked example.
var (
	exampleWorkload = Workload{QPS: 10000, Docs: 100e6, MatchShare: 0.0001, Teams: 20, Steps: 2, WritesPerSecond: 1000}
	exampleOptions  = Options{CoresPerMachine: 32, MemoryPerMachine: 128 << 30, Utilization: 0.5, DocsPerShard: 5e6, MinReplicas: 2, MemoryShare: 0.6}
)

// TestExamplePlan: the plan of docs/scaling.md is the model's, figure for
// figure, and it is consistent with its own inputs.
func TestExamplePlan(t *testing.T) {
	p, err := Size(Measured, exampleWorkload, exampleOptions)
	if err != nil {
		t.Fatal(err)
	}
	if p.Shards != 20 || p.DocsPerShard != 5e6 || p.Replicas < 2 {
		t.Fatalf("plan %+v", p)
	}
	if math.Abs(p.MessagesPerSecond-10000*82) > 1 {
		t.Errorf("messages %v, want 10,000 × (2 + 4 × 20)", p.MessagesPerSecond)
	}
	if cores := float64(p.SearcherMachines * exampleOptions.CoresPerMachine); cores < p.SearcherCores {
		t.Errorf("%d searcher machines have %v cores for %v needed", p.SearcherMachines, cores, p.SearcherCores)
	}
	doc, err := os.ReadFile("../../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := planTable(p); !strings.Contains(string(doc), table) {
		t.Errorf("docs/scaling.md does not have the model's plan; it should read:\n%s", table)
	}
}

// TestSizeRefusesNonsense: a workload or machine the model cannot plan
// for is refused, naming what is wrong.
func TestSizeRefusesNonsense(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		o    Options
		want string
	}{
		{"no queries", Workload{Docs: 1, MatchShare: 0.1}, exampleOptions, "query rate"},
		{"no match share", Workload{QPS: 1, Docs: 1}, exampleOptions, "share of documents"},
		{"no cores", exampleWorkload, Options{MemoryPerMachine: 1, Utilization: 0.5, DocsPerShard: 1, MemoryShare: 1}, "cores"},
		{"utilization over 1", exampleWorkload, Options{CoresPerMachine: 1, MemoryPerMachine: 1, Utilization: 2, DocsPerShard: 1, MemoryShare: 1}, "utilization"},
	} {
		if _, err := Size(Measured, tc.w, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// planTable renders a plan as docs/scaling.md shows it.
func planTable(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| shards | %d of %.0f documents, %d replicas each |\n", p.Shards, p.DocsPerShard, p.Replicas)
	fmt.Fprintf(&b, "| one query's CPU | searchers %.1f ms, broker %.2f ms, NATS %.2f ms |\n", p.Query.Searcher*1e3, p.Query.Broker*1e3, p.Query.NATS*1e3)
	fmt.Fprintf(&b, "| searchers | %.0f cores at 50%%: %d machines (memory alone: %.0f GB of shards for %.0f GB of page cache a machine) |\n",
		p.SearcherCores, p.SearcherMachines, p.IndexBytes*float64(p.Replicas)/1e9, float64(exampleOptions.MemoryPerMachine)*exampleOptions.MemoryShare/1e9)
	fmt.Fprintf(&b, "| brokers | %.0f cores: %d machines, each holding %.1f GB of warm plugin instances |\n", p.BrokerCores, p.BrokerMachines, p.BrokerPluginBytes/1e9)
	fmt.Fprintf(&b, "| NATS | %.0f messages/s, %.0f cores: a %d-member cluster |\n", p.MessagesPerSecond, p.NATSCores, p.NATSMachines)
	fmt.Fprintf(&b, "| indexing | %.1f cores for 1,000 updates/s into every replica |\n", p.IndexCores)
	return b.String()
}
