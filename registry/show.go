package registry

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// replicaWait is how long index.show waits for a shard's searchers to
// say they serve it.
const replicaWait = 150 * time.Millisecond

// history lists the index's pipeline revisions the registry keeps (64),
// oldest first: what a rollback walks back through.
func (s *Service) history(ctx context.Context, index string) ([]*api.PipelineSpec, error) {
	hist, err := s.store.PipelineHistory(ctx, index)
	if hist == nil && err == nil {
		hist = []*api.PipelineSpec{} // JSON [] rather than null
	}
	return hist, err
}

// indexInfo is what a team may read of its own index: its definition, its
// current snapshot and the replicas that serve each shard now.
func (s *Service) indexInfo(ctx context.Context, index string) (*api.IndexInfo, error) {
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	m, _, err := s.store.Manifest(ctx, index)
	if err != nil {
		return nil, err
	}
	info := &api.IndexInfo{IndexDefinition: def, Generation: m.Generation, SnapshotCreated: m.Created, ShardStatus: make([]api.ShardStatus, def.Shards)}
	var wg sync.WaitGroup
	for sh := range def.Shards {
		st := &info.ShardStatus[sh]
		st.Shard = sh
		for _, snap := range m.Shards {
			if snap.Shard == sh {
				st.SnapshotDocs, st.SnapshotSeq, st.SnapshotBytes = snap.Docs, snap.Seq, snap.Size
			}
		}
		wg.Go(func() { st.Replicas = s.replicas(index, sh) })
	}
	wg.Wait()
	return info, nil
}

// replicas asks every searcher serving a shard for its replica id, as the
// broker's discovery does, and gathers the answers that come within
// replicaWait, sorted.
func (s *Service) replicas(index string, shard int) []string {
	out := []string{}
	inbox := s.nc.NewRespInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return out
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishRequest(subject.Replicas(index, shard), inbox, nil); err != nil {
		return out
	}
	deadline := time.Now().Add(replicaWait)
	for {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		if id := string(m.Data); len(id) > 0 && len(id) <= 64 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
