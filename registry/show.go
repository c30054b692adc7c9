package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/gather"
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
	if info.Aliases, err = s.store.AliasesOf(ctx, index); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var serving []api.RoleStatus
	wg.Go(func() { serving = s.searcherStatus() })
	for sh := range def.Shards {
		st := &info.ShardStatus[sh]
		st.Shard, st.Serving = sh, []api.ReplicaShard{}
		for _, snap := range m.Shards {
			if snap.Shard == sh {
				st.SnapshotDocs, st.SnapshotSeq, st.SnapshotBytes = snap.Docs, snap.Seq, snap.Size
			}
		}
		wg.Go(func() { st.Replicas = s.replicas(index, sh) })
	}
	wg.Wait()
	for _, st := range serving {
		for _, rs := range st.Shards {
			if rs.Index == index && rs.Shard >= 0 && rs.Shard < len(info.ShardStatus) {
				rs.Replica = st.ID
				info.ShardStatus[rs.Shard].Serving = append(info.ShardStatus[rs.Shard].Serving, rs)
			}
		}
	}
	for i := range info.ShardStatus {
		slices.SortFunc(info.ShardStatus[i].Serving, func(a, b api.ReplicaShard) int { return strings.Compare(a.Replica, b.Replica) })
	}
	return info, nil
}

// searcherStatus gathers, within replicaWait, what every searcher says of
// itself in micro discovery ($SRV.STATS.quarry-searcher).
func (s *Service) searcherStatus() []api.RoleStatus {
	var out []api.RoleStatus
	subj, err := micro.ControlSubject(micro.StatsVerb, subject.SearcherService, "")
	if err != nil {
		return nil
	}
	_ = gather.Replies(context.Background(), s.nc, subj, nil, replicaWait, func(m *nats.Msg) {
		var stats micro.Stats
		if json.Unmarshal(m.Data, &stats) != nil {
			return
		}
		for _, e := range stats.Endpoints {
			var st api.RoleStatus
			if e.Name == "status" && json.Unmarshal(e.Data, &st) == nil && st.ID != "" {
				out = append(out, st)
			}
		}
	})
	return out
}

// replicas asks every searcher serving a shard for its replica id, as the
// broker's discovery does, and gathers the answers that come within
// replicaWait, sorted.
func (s *Service) replicas(index string, shard int) []string {
	out := []string{}
	_ = gather.Replies(context.Background(), s.nc, subject.Replicas(index, shard), nil, replicaWait, func(m *nats.Msg) {
		if id := string(m.Data); len(id) > 0 && len(id) <= 64 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	})
	slices.Sort(out)
	return out
}

// brokersWait is how long queries.report gathers the brokers' answers.
const brokersWait = 300 * time.Millisecond

// reportSize caps each list of a query report.
const reportSize = 20

// queryReport asks every broker for its query log of the index and sums
// them: the most searched texts, those that found nothing, the slowest
// searches.
func (s *Service) queryReport(ctx context.Context, index string) (*api.QueryReport, error) {
	rep := &api.QueryReport{Index: index, Top: []api.QueryCount{}, Zero: []api.QueryCount{}, Slow: []api.LoggedQuery{}}
	top, zero := map[string]int{}, map[string]int{}
	err := gather.Replies(ctx, s.nc, subject.BrokerQueries, []byte(index), brokersWait, func(m *nats.Msg) {
		var bq api.BrokerQueries
		if json.Unmarshal(m.Data, &bq) != nil || bq.Index != index {
			return
		}
		rep.Brokers++
		rep.Searches += len(bq.Recent)
		for _, q := range bq.Recent {
			top[q.Q]++
			if q.Total == 0 {
				zero[q.Q]++
			}
		}
		rep.Slow = append(rep.Slow, bq.Slow...)
	})
	if err != nil {
		return nil, err
	}
	rep.Top, rep.Zero = counts(top), counts(zero)
	slices.SortFunc(rep.Slow, func(a, b api.LoggedQuery) int { return cmp.Compare(b.TookMS, a.TookMS) })
	rep.Slow = rep.Slow[:min(len(rep.Slow), reportSize)]
	return rep, nil
}

// counts lists the most frequent texts first (ties by text), at most
// reportSize.
func counts(m map[string]int) []api.QueryCount {
	out := make([]api.QueryCount, 0, len(m))
	for q, n := range m {
		out = append(out, api.QueryCount{Q: q, Count: n})
	}
	slices.SortFunc(out, func(a, b api.QueryCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Q, b.Q))
	})
	return out[:min(len(out), reportSize)]
}
