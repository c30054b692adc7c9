package client

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/gather"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Roles looks at what runs on NATS: every micro service instance (micro
// discovery: $SRV.INFO and $SRV.STATS, as `nats micro ls` does) and the
// searcher replicas of every index's shards (the replica discovery brokers
// use). It gathers the answers that come within wait (default 300ms). It
// needs the index definitions (JetStream) and the discovery subjects: an
// operator's NATS user.
func (c *Client) Roles(ctx context.Context, wait time.Duration) (*api.Roles, error) {
	if wait <= 0 {
		wait = 300 * time.Millisecond
	}
	defs, err := c.Indexes(ctx)
	if err != nil {
		return nil, err
	}
	out := &api.Roles{Services: []api.ServiceInfo{}, Searchers: map[string][]string{}}
	infoSubj, _ := micro.ControlSubject(micro.InfoVerb, "", "")
	statsSubj, _ := micro.ControlSubject(micro.StatsVerb, "", "")
	// Every question at once: the answers come within one wait.
	var infoAns, statsAns [][]byte
	type shardRef struct {
		index string
		shard int
	}
	var refs []shardRef
	for _, def := range defs {
		for sh := range def.Shards {
			refs = append(refs, shardRef{def.Name, sh})
		}
	}
	replicaAns := make([][][]byte, len(refs))
	var wg sync.WaitGroup
	wg.Go(func() { infoAns = c.gather(ctx, infoSubj, wait) })
	wg.Go(func() { statsAns = c.gather(ctx, statsSubj, wait) })
	for i, r := range refs {
		wg.Go(func() { replicaAns[i] = c.gather(ctx, subject.Replicas(r.index, r.shard), wait) })
	}
	wg.Wait()
	infos, stats := map[string]micro.Info{}, map[string]micro.Stats{}
	for _, m := range infoAns {
		var i micro.Info
		if json.Unmarshal(m, &i) == nil && i.ID != "" {
			infos[i.ID] = i
		}
	}
	for _, m := range statsAns {
		var s micro.Stats
		if json.Unmarshal(m, &s) == nil && s.ID != "" {
			stats[s.ID] = s
		}
	}
	for id, st := range stats {
		svc := api.ServiceInfo{Name: st.Name, ID: id, Version: st.Version, Started: st.Started, Description: infos[id].Description, Endpoints: []api.EndpointInfo{}}
		for _, e := range st.Endpoints {
			ep := api.EndpointInfo{Name: e.Name, Subject: e.Subject, Requests: e.NumRequests, Errors: e.NumErrors, LastError: e.LastError}
			if len(e.Data) > 0 && string(e.Data) != "null" {
				ep.Data = e.Data
			}
			svc.Endpoints = append(svc.Endpoints, ep)
		}
		out.Services = append(out.Services, svc)
	}
	slices.SortFunc(out.Services, func(a, b api.ServiceInfo) int {
		return strings.Compare(a.Name+"/"+a.ID, b.Name+"/"+b.ID)
	})
	for i, r := range refs {
		for _, m := range replicaAns[i] {
			if id := string(m); id != "" && len(id) <= 64 {
				out.Searchers[id] = append(out.Searchers[id], r.index+"/"+strconv.Itoa(r.shard))
			}
		}
	}
	return out, nil
}

// gather publishes an empty request on subj and returns every reply's
// data that comes within wait.
func (c *Client) gather(ctx context.Context, subj string, wait time.Duration) [][]byte {
	var out [][]byte
	_ = gather.Replies(ctx, c.nc, subj, nil, wait, func(m *nats.Msg) { out = append(out, m.Data) })
	return out
}
