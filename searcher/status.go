package searcher

import (
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/rolestatus"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Status is what the searcher says of itself in micro discovery: whether
// it is ready or draining, and every shard it serves with its
// generation, applied sequence, replay lag and documents, and the shard
// requests it answered.
func (s *Searcher) Status() api.RoleStatus {
	st := api.RoleStatus{Role: "searcher", ID: s.id, Draining: s.Draining(), Shards: []api.ReplicaShard{},
		Requests: s.answered.Load(), Errors: s.failed.Load()}
	select {
	case <-s.ready:
		st.Ready = true
	default:
	}
	for _, sh := range s.Stats() {
		st.Shards = append(st.Shards, api.ReplicaShard{Index: sh.Index, Shard: sh.Shard, Generation: sh.Generation, Seq: sh.Seq, Lag: sh.Lag, Docs: sh.Docs, Rejected: sh.Rejected})
	}
	return st
}

// serveStatus registers the quarry-searcher micro service.
func (s *Searcher) serveStatus() (micro.Service, error) {
	return rolestatus.Serve(s.nc, subject.SearcherService, api.Version, "Quarry searcher: shard replicas from snapshots and the stream", s.id, func() any { return s.Status() })
}
