// Package capacity is Quarry's sizing model: from what a query costs each
// role in CPU, measured on one machine with `quarry bench`, it sizes a
// deployment for a query rate over a corpus. docs/scaling.md explains the
// model, the measurements its costs come from (Measured) and a worked
// example; the package's test checks the model against those
// measurements.
//
// The model is linear and deliberately simple: a searcher's CPU for one
// query on one shard is a fixed part plus a part proportional to the
// documents the query matches in the shard; the broker's is a fixed part plus a part per shard it
// fans out to and per plugin step; NATS's is a cost per message routed.
// What a CPU profile cannot attribute to a role (the Go runtime's
// collector, connections' read loops) is spread over the roles in
// proportion (Costs.Overhead).
package capacity

import (
	"errors"
	"fmt"
	"math"
)

// Costs are CPU costs in seconds of one core.
type Costs struct {
	// ShardFixed and ShardPerMatch: a searcher's CPU for one query on one
	// shard of an index of two shards or more, ShardFixed + ShardPerMatch
	// × the documents the query matches in the shard, for a query whose
	// global statistics are not cached (both of its phases: the
	// statistics round trip and the search).
	ShardFixed, ShardPerMatch float64
	// SingleShardFixed and SingleShardPerMatch: the same for an index of
	// one shard, which costs less per match (measured: 2.6×; the
	// statistics of a sharded query's expanded terms are gathered from
	// every shard and searched on every shard).
	SingleShardFixed, SingleShardPerMatch float64
	// BrokerFixed and BrokerPerShard: the broker's CPU for one query
	// without plugins, BrokerFixed + BrokerPerShard × shards.
	BrokerFixed, BrokerPerShard float64
	// PluginStep is the broker's CPU for one plugin step of a query.
	PluginStep float64
	// NATSPerMessage is the NATS server's CPU per message it routes.
	NATSPerMessage float64
	// ClientPerQuery is the client's CPU per query: not on the
	// platform's machines, but in the single-machine measurements.
	ClientPerQuery float64
	// Overhead is the CPU a profile does not attribute to any role (the
	// Go runtime's collector, connections' read loops), as a share of
	// what it does (0.25: a quarter more); every role's cost is raised by
	// it.
	Overhead float64
	// IndexBytesPerDoc is a shard replica's size on disk per document:
	// what a searcher should hold in memory (the page cache) for its
	// shards, for the tail's sake.
	IndexBytesPerDoc float64
	// PluginInstanceBytes is the memory of one warm plugin instance (a Go
	// guest's; every broker keeps WarmInstances of each step of every
	// team's pipeline).
	PluginInstanceBytes float64
	// IndexPerDoc is the CPU to index one document into one replica (the
	// indexer's, and each searcher replica's, as each applies every
	// update).
	IndexPerDoc float64
}

// Measured are the costs measured with `quarry bench` on the 2-core
// machine of docs/scaling.md (where each figure comes from, and the
// commands), fitted as TestModelFitsMeasurements does.
var Measured = Costs{
	ShardFixed: 0.548e-3, ShardPerMatch: 1.818e-6,
	SingleShardFixed: 1.051e-3, SingleShardPerMatch: 0.711e-6,
	BrokerFixed: 0.280e-3, BrokerPerShard: 0.0707e-3, PluginStep: 0.73e-3,
	NATSPerMessage: 11.4e-6, ClientPerQuery: 0.102e-3, Overhead: 0.176,
	IndexBytesPerDoc: 1900, IndexPerDoc: 0.33e-3, PluginInstanceBytes: 4e6,
}

// WarmInstances is the warm instances a broker keeps of each plugin step
// (plugins.Spec.Instances' default).
const WarmInstances = 4

// MessagesPerQuery is what one query sends through NATS: the client's
// request and its reply, and for each shard a statistics round trip and a
// search round trip (a query whose statistics are cached skips the first).
func MessagesPerQuery(shards int) int { return 2 + 4*shards }

// Query is one query's CPU by role, in core-seconds.
type Query struct {
	Searcher, Broker, NATS float64
}

// Total is the query's CPU over every role.
func (q Query) Total() float64 { return q.Searcher + q.Broker + q.NATS }

// Query returns what a query over shards shards of docsPerShard documents
// each, matching the share matchShare of them, with steps plugin steps,
// costs each role.
func (c Costs) Query(shards int, docsPerShard, matchShare float64, steps int) Query {
	k := 1 + c.Overhead
	s := float64(shards)
	fixed, perMatch := c.ShardFixed, c.ShardPerMatch
	if shards == 1 {
		fixed, perMatch = c.SingleShardFixed, c.SingleShardPerMatch
	}
	return Query{
		Searcher: k * s * (fixed + perMatch*matchShare*docsPerShard),
		Broker:   k * (c.BrokerFixed + c.BrokerPerShard*s + c.PluginStep*float64(steps)),
		NATS:     k * c.NATSPerMessage * float64(MessagesPerQuery(shards)),
	}
}

// SingleMachine is one query's CPU when every role and the client run in
// one process (as in `quarry bench`): what the measurements measured.
func (c Costs) SingleMachine(shards int, docsPerShard, matchShare float64, steps int) float64 {
	return c.Query(shards, docsPerShard, matchShare, steps).Total() + (1+c.Overhead)*c.ClientPerQuery
}

// Workload is what a deployment must serve.
type Workload struct {
	// QPS is the query rate at peak, over every team.
	QPS float64
	// Docs is the documents over every index.
	Docs float64
	// MatchShare is the share of the documents a query matches on
	// average: what the searchers' cost grows with (the catalogue's
	// queries in `quarry bench` match about 9%; a shop's selective
	// queries far fewer).
	MatchShare float64
	// Teams share the deployment; each has Steps plugin steps in its
	// pipeline on average.
	Teams, Steps int
	// WritesPerSecond is the updates at peak.
	WritesPerSecond float64
}

// Options is the shape of the machines and the targets a plan meets.
type Options struct {
	// CoresPerMachine and MemoryPerMachine (bytes) of every machine.
	CoresPerMachine  int
	MemoryPerMachine float64
	// Utilization is the share of its cores a role may use at the peak
	// rate: headroom for the tail (queues grow fast past 0.5–0.7).
	Utilization float64
	// DocsPerShard is the shard size to plan for: smaller shards cost
	// more per query in all (the fixed part, per shard) but bound a
	// searcher's time per request.
	DocsPerShard float64
	// MinReplicas is the copies of each shard, at least 2 for a
	// searcher's loss to leave every shard served.
	MinReplicas int
	// MemoryShare is the share of a searcher's memory its shards may
	// take (the rest: the process, the broker's caches if co-located).
	MemoryShare float64
}

// Plan is a sized deployment.
type Plan struct {
	Shards       int
	DocsPerShard float64
	// Replicas is the copies of each shard: enough for the query rate,
	// and at least Options.MinReplicas.
	Replicas int
	// Cores each role needs at the peak rate, at Options.Utilization.
	SearcherCores, BrokerCores, NATSCores, IndexCores float64
	// Machines of Options' shape per role; searchers are also bounded by
	// memory (every replica in the page cache).
	SearcherMachines, BrokerMachines, NATSMachines int
	// MessagesPerSecond through NATS at the peak rate.
	MessagesPerSecond float64
	// IndexBytes is one copy of every shard.
	IndexBytes float64
	// BrokerPluginBytes is the warm plugin instances every broker holds
	// for every team's pipeline.
	BrokerPluginBytes float64
	// Query is one query's CPU by role.
	Query Query
}

// Size plans a deployment for w on machines of o's shape.
func Size(c Costs, w Workload, o Options) (Plan, error) {
	switch {
	case w.QPS <= 0 || w.Docs <= 0:
		return Plan{}, errors.New("capacity: the workload needs a query rate and documents")
	case w.MatchShare <= 0 || w.MatchShare > 1:
		return Plan{}, fmt.Errorf("capacity: the share of documents a query matches must be in (0, 1], got %g", w.MatchShare)
	case o.CoresPerMachine <= 0 || o.MemoryPerMachine <= 0:
		return Plan{}, errors.New("capacity: machines need cores and memory")
	case o.Utilization <= 0 || o.Utilization > 1:
		return Plan{}, fmt.Errorf("capacity: utilization must be in (0, 1], got %g", o.Utilization)
	case o.DocsPerShard <= 0:
		return Plan{}, errors.New("capacity: a shard size is needed")
	case o.MemoryShare <= 0 || o.MemoryShare > 1:
		return Plan{}, fmt.Errorf("capacity: memory share must be in (0, 1], got %g", o.MemoryShare)
	}
	p := Plan{Shards: int(math.Ceil(w.Docs / o.DocsPerShard))}
	p.DocsPerShard = w.Docs / float64(p.Shards)
	p.Query = c.Query(p.Shards, p.DocsPerShard, w.MatchShare, w.Steps)
	p.SearcherCores = w.QPS * p.Query.Searcher / o.Utilization
	p.BrokerCores = w.QPS * p.Query.Broker / o.Utilization
	p.NATSCores = w.QPS * p.Query.NATS / o.Utilization
	p.MessagesPerSecond = w.QPS * float64(MessagesPerQuery(p.Shards))
	p.IndexBytes = w.Docs * c.IndexBytesPerDoc
	p.BrokerPluginBytes = float64(w.Teams*w.Steps*WarmInstances) * c.PluginInstanceBytes
	// Every write is applied by the indexer and by every searcher replica.
	cores := float64(o.CoresPerMachine)
	// Replicas: each shard's share of the searchers' CPU, spread so that
	// no replica needs more than a machine's cores; at least MinReplicas.
	perShard := p.SearcherCores / float64(p.Shards)
	p.Replicas = max(o.MinReplicas, int(math.Ceil(perShard/cores)))
	p.IndexCores = w.WritesPerSecond * c.IndexPerDoc * float64(1+p.Replicas) / o.Utilization
	byCPU := math.Ceil((p.SearcherCores + p.IndexCores*float64(p.Replicas)/float64(1+p.Replicas)) / cores)
	byMemory := math.Ceil(p.IndexBytes * float64(p.Replicas) / (o.MemoryPerMachine * o.MemoryShare))
	p.SearcherMachines = int(max(byCPU, byMemory, float64(o.MinReplicas)))
	p.BrokerMachines = max(2, int(math.Ceil(p.BrokerCores/cores)))
	p.NATSMachines = max(3, int(math.Ceil(p.NATSCores/cores)))
	return p, nil
}
