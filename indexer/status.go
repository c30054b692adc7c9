package indexer

import (
	"cmp"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/rolestatus"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Status is what the indexer says of itself in micro discovery: whether
// it is ready, and the shard replicas it follows the stream with to build
// snapshots.
func (ix *Indexer) Status() api.RoleStatus {
	st := api.RoleStatus{Role: "indexer", ID: ix.id, Shards: []api.ReplicaShard{}}
	select {
	case <-ix.ready:
		st.Ready = true
	default:
	}
	ix.mu.Lock()
	for name, is := range ix.indexes {
		for i, r := range is.replicas {
			if r == nil {
				continue
			}
			p := r.Progress()
			docs, _ := r.DocCount()
			st.Shards = append(st.Shards, api.ReplicaShard{Index: name, Shard: i, Generation: r.Generation(), Seq: p.Seq, Lag: p.Pending, Docs: docs, Rejected: p.Rejected})
		}
	}
	ix.mu.Unlock()
	slices.SortFunc(st.Shards, func(a, b api.ReplicaShard) int {
		return cmp.Or(strings.Compare(a.Index, b.Index), cmp.Compare(a.Shard, b.Shard))
	})
	return st
}

// serveStatus registers the quarry-indexer micro service.
func (ix *Indexer) serveStatus() (micro.Service, error) {
	return rolestatus.Serve(ix.nc, subject.IndexerService, api.Version, "Quarry indexer: follows the stream, publishes snapshot generations", ix.id, func() any { return ix.Status() })
}
