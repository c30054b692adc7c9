package api

import "time"

// IndexInfo is what a team may read of its own index through the admin
// API (operation index.show; HTTP GET /v1/indexes/{index}/info): its
// definition, its current snapshot generation and, per shard, the
// snapshot's figures and the searcher replicas that answer for it now.
type IndexInfo struct {
	IndexDefinition
	// Generation is the current snapshot generation (0: none yet).
	Generation uint64 `json:"generation"`
	// SnapshotCreated is when that generation was published.
	SnapshotCreated time.Time `json:"snapshot_created,omitzero"`
	// ShardStatus has one entry per shard, in shard order.
	ShardStatus []ShardStatus `json:"shard_status"`
	// Aliases are the aliases that point at the index, sorted.
	Aliases []string `json:"aliases,omitempty"`
}

// ShardStatus is one shard of an IndexInfo.
type ShardStatus struct {
	Shard int `json:"shard"`
	// SnapshotDocs, SnapshotSeq and SnapshotBytes are the current
	// generation's: its documents, the last stream sequence it includes,
	// its packed size.
	SnapshotDocs  uint64 `json:"snapshot_docs"`
	SnapshotSeq   uint64 `json:"snapshot_seq"`
	SnapshotBytes int64  `json:"snapshot_bytes"`
	// Replicas are the ids of the searcher processes that answered the
	// shard's replica discovery (subject quarry.v1.replicas.<index>.<shard>)
	// within a moment, sorted; none: no searcher serves the shard.
	Replicas []string `json:"replicas"`
	// Serving is what each searcher serving the shard says of its replica
	// in micro discovery (quarry-searcher's status): generation, applied
	// sequence, replay lag, documents; by replica id.
	Serving []ReplicaShard `json:"serving"`
}

// ServiceInfo is one instance of a NATS micro service Quarry runs (the
// broker's "quarry", the admin API's "quarry-admin"), as micro discovery
// ($SRV.INFO and $SRV.STATS) reports it.
type ServiceInfo struct {
	Name        string    `json:"name"`
	ID          string    `json:"id"`
	Version     string    `json:"version"`
	Description string    `json:"description,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	// Endpoints are the instance's endpoints with their figures.
	Endpoints []EndpointInfo `json:"endpoints"`
}

// EndpointInfo is one micro endpoint of a ServiceInfo.
type EndpointInfo struct {
	Name     string `json:"name"`
	Subject  string `json:"subject"`
	Requests int    `json:"num_requests"`
	Errors   int    `json:"num_errors"`
	// LastError is the last error's text, if any.
	LastError string `json:"last_error,omitempty"`
	// Data is the endpoint's own figures (the broker's search endpoint:
	// its served counts, docs/api.md), as it gave them.
	Data any `json:"data,omitempty"`
}

// Roles is what one look at NATS finds running: every micro service
// instance, and the searcher replicas of every index's shards.
type Roles struct {
	Services []ServiceInfo `json:"services"`
	// Searchers maps a searcher replica id to the shards it serves,
	// "index/shard".
	Searchers map[string][]string `json:"searchers"`
}

// LoggedQuery is one search a broker answered, as its query log keeps it
// (what the console's Traffic page shows): the text searched, the hits it
// found and how long it took.
type LoggedQuery struct {
	// Q is the request's q, or "query: " and its bleve query's JSON when
	// it had none; at most 200 bytes.
	Q      string    `json:"q"`
	Total  uint64    `json:"total"`
	TookMS float64   `json:"took_ms"`
	Time   time.Time `json:"time"`
	// Stages are the times of each stage, for a slow query.
	Stages []Stage `json:"stages,omitempty"`
}

// BrokerQueries is one broker's query log of an index: its last searches
// and its last slow ones (over the broker's slow-query time), oldest
// first. Brokers answer subject quarry.v1.brokers.queries with it.
type BrokerQueries struct {
	Broker string        `json:"broker"`
	Index  string        `json:"index"`
	Recent []LoggedQuery `json:"recent"`
	Slow   []LoggedQuery `json:"slow"`
}

// QueryCount is a query text and how often it was searched.
type QueryCount struct {
	Q     string `json:"q"`
	Count int    `json:"count"`
}

// QueryReport sums every broker's query log of an index (admin operation
// queries.report; HTTP GET /v1/indexes/{index}/queries): the searches
// most asked for, those that found nothing, and the slowest, with the
// time of each stage.
type QueryReport struct {
	Index string `json:"index"`
	// Brokers answered; Searches is how many searches their logs hold.
	Brokers  int           `json:"brokers"`
	Searches int           `json:"searches"`
	Top      []QueryCount  `json:"top"`
	Zero     []QueryCount  `json:"zero_results"`
	Slow     []LoggedQuery `json:"slow"`
}

// RoleStatus is what a searcher or an indexer says of itself in micro
// discovery: its micro services quarry-searcher and quarry-indexer carry
// it as their status endpoint's data (`nats micro stats quarry-searcher`)
// and answer it on that endpoint.
type RoleStatus struct {
	Role string `json:"role"` // searcher or indexer
	// ID is the process's id (a searcher's is its replica id).
	ID       string `json:"id"`
	Ready    bool   `json:"ready"`
	Draining bool   `json:"draining,omitempty"`
	// Requests and Errors count a searcher's shard requests answered, and
	// those answered with an error, since it started (its micro
	// service's own endpoint counts only status questions: shard
	// requests come on subjects of their own).
	Requests uint64 `json:"requests,omitempty"`
	Errors   uint64 `json:"errors,omitempty"`
	// Shards are the shard replicas it holds: a searcher's serve searches,
	// an indexer's follow the stream to build snapshots.
	Shards []ReplicaShard `json:"shards"`
}

// ReplicaShard is one shard replica of a RoleStatus.
type ReplicaShard struct {
	Index string `json:"index"`
	Shard int    `json:"shard"`
	// Generation is the snapshot generation the replica was opened from;
	// Seq the last stream sequence it applied; Lag the messages of the
	// shard the stream held after it, as of its last batch.
	Generation uint64 `json:"generation"`
	Seq        uint64 `json:"seq"`
	Lag        uint64 `json:"lag"`
	Docs       uint64 `json:"docs"`
	// Rejected counts the messages of the shard the replica skipped since
	// it opened because they could not be applied (over the index's
	// document limits, malformed, refused by bleve: they reached the
	// stream past the client's checks); its log names each, with its id
	// and stream sequence ("skipping a document that cannot be applied").
	Rejected uint64 `json:"rejected,omitempty"`
	// Replica, in an IndexInfo, is the searcher it belongs to.
	Replica string `json:"replica,omitempty"`
}

// DocumentCount is the documents an index holds now (admin operation
// documents.count): each shard's live count from one of its searchers,
// summed. A shard no searcher answers for fails the count.
type DocumentCount struct {
	Index string `json:"index"`
	Docs  uint64 `json:"docs"`
}

// ShardsApplied is, for each shard of an index, the last stream sequence
// one of its searchers has applied (admin operation documents.applied):
// how far writes are searchable.
type ShardsApplied struct {
	Index  string         `json:"index"`
	Shards []ShardApplied `json:"shards"`
}

// ShardApplied is one shard of a ShardsApplied.
type ShardApplied struct {
	Shard int `json:"shard"`
	// Served is false when no searcher answered for the shard in time
	// (none serves it, or it is busy loading): Seq is then 0.
	Served bool   `json:"served"`
	Seq    uint64 `json:"seq"`
}
