package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// fetchGroup is the part of the page one shard returned.
type fetchGroup struct {
	result int      // index in run.results (and plan.Shards)
	ids    []string // the hits' ids, in page order
	pos    []int    // their places in the page
	res    shardResult
}

// fetch loads the stored fields the caller asked for, for the page alone,
// from the shards that returned its hits (query-then-fetch): the rankers
// read their candidates' fields from doc values, so no shard loaded a
// stored document for a candidate the page does not show. A fetch that
// fails fails the search, unless the request takes partial results: its
// hits are then shown without fields, and the shard is named in the
// failures.
func (r *run) fetch(ctx context.Context) error {
	start := time.Now()
	defer func() { r.fetchTook = time.Since(start) }()
	hits := r.resp.Hits
	for i := range hits {
		hits[i].Fields = nil // the rankers' fields, not the caller's
	}
	if len(r.plan.Fields) == 0 || len(hits) == 0 {
		return nil
	}
	groups := r.fetchGroups()
	var wg sync.WaitGroup
	for g := range groups {
		wg.Go(func() { r.fetchFrom(ctx, &groups[g]) })
	}
	wg.Wait()
	for _, g := range groups {
		err := g.res.err
		var sr wire.ShardResponse
		if err == nil {
			err = wire.DecodeShardResponse(g.res.reply, &sr)
		}
		sh := r.plan.Shards[g.result]
		if err != nil {
			err = r.b.shardError(ctx, r.plan, sh, err)
			if !r.plan.AllowPartial {
				return fmt.Errorf("fetch the page's fields from shard %d: %w", sh, err)
			}
			r.resp.Shards.Failed++
			r.resp.Shards.Successful--
			r.resp.Shards.Failures = append(r.resp.Shards.Failures, api.ShardFailure{Shard: sh, Reason: "fetch: " + err.Error()})
			continue
		}
		// A fetch answers in the order asked; a searcher that predates
		// the fetch phase answers it as a search, in its own order.
		for j, h := range sr.Hits {
			if j < len(g.ids) && h.ID == g.ids[j] {
				hits[g.pos[j]].Fields = h.Fields
				continue
			}
			for k, id := range g.ids {
				if id == h.ID {
					hits[g.pos[k]].Fields = h.Fields
				}
			}
		}
	}
	if r.profile {
		r.fetchDetail = fmt.Sprintf("%d documents from %d shards", len(hits), len(groups))
	}
	return nil
}

// fetchGroups finds which shard returned each hit of the page.
func (r *run) fetchGroups() []fetchGroup {
	hits := r.resp.Hits
	where := make(map[string]int, len(hits))
	for i, h := range hits {
		where[h.ID] = i
	}
	var groups []fetchGroup
	for i, res := range r.results {
		if res.resp == nil {
			continue
		}
		var g *fetchGroup
		for _, h := range res.resp.Hits {
			p, ok := where[h.ID]
			if !ok {
				continue
			}
			delete(where, h.ID) // a hit is fetched once
			if g == nil {
				groups = append(groups, fetchGroup{result: i})
				g = &groups[len(groups)-1]
			}
			g.ids = append(g.ids, h.ID)
			g.pos = append(g.pos, p)
		}
	}
	return groups
}

// fetchFrom asks g's shard for its hits' fields, the replica that
// answered the query phase first (it holds them at the same point of the
// stream).
func (r *run) fetchFrom(ctx context.Context, g *fetchGroup) {
	req, err := wire.NewFetch(g.ids, r.plan.Fields)
	proto := nats.NewMsg("")
	if err == nil {
		err = wire.Encode(proto, req, r.b.cfg.CompressThreshold)
	}
	if err != nil {
		g.res.err = err
		return
	}
	prefer := r.results[g.result].resp.Replica
	g.res = r.b.askShard(ctx, r.plan.Index, r.plan.Shards[g.result], proto.Data, shardHeader(ctx, proto), r.plan.Hedge, prefer)
}
