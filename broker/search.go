package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Search runs one request against an index: build the query, fan out to
// every shard, merge.
func (b *Broker) Search(ctx context.Context, index string, req *api.SearchRequest) (*api.SearchResponse, error) {
	start := time.Now()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	def, ok := b.Index(index)
	if !ok {
		return nil, api.NotFound("index %q does not exist", index)
	}
	timeout := b.cfg.DefaultTimeout
	if req.TimeoutMS > 0 {
		timeout = min(time.Duration(req.TimeoutMS)*time.Millisecond, b.cfg.MaxTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	q, err := BuildQuery(req)
	if err != nil {
		return nil, err
	}
	qJSON, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("encode query: %w", err)
	}
	sreq := &wire.ShardRequest{Query: qJSON, K: req.From + req.EffectiveSize(), Sort: req.Sort, Fields: req.Fields, Facets: req.Facets}
	planned := time.Now()

	results := b.fanOut(ctx, index, def.Shards, sreq)
	fanned := time.Now()

	resp := &api.SearchResponse{Shards: api.ShardsInfo{Total: def.Shards}}
	var ok2 []*wire.ShardResponse
	for i, r := range results {
		if r.err != nil {
			resp.Shards.Failed++
			resp.Shards.Failures = append(resp.Shards.Failures, api.ShardFailure{Shard: i, Reason: r.err.Error()})
			continue
		}
		resp.Shards.Successful++
		ok2 = append(ok2, r.resp)
	}
	if resp.Shards.Failed > 0 && (!req.PartialAllowed() || resp.Shards.Successful == 0) {
		f := resp.Shards.Failures[0]
		code := api.CodeUnavailable
		if errors.Is(results[f.Shard].err, api.ErrBadRequest) {
			code = api.CodeBadRequest
		} else if errors.Is(results[f.Shard].err, api.ErrTimeout) {
			code = api.CodeTimeout
		}
		return nil, api.Errorf(code, "%d of %d shards failed; shard %d: %s", resp.Shards.Failed, def.Shards, f.Shard, f.Reason)
	}
	merge(resp, ok2, req)
	done := time.Now()
	resp.TookMS = ms(done.Sub(start))
	if req.Profile {
		resp.Profile = &api.Profile{Stages: []api.Stage{
			{Name: "plan", TookMS: ms(planned.Sub(start)), Detail: string(qJSON)},
			{Name: "fan-out", TookMS: ms(fanned.Sub(planned)), Detail: fmt.Sprintf("%d shards, k=%d", def.Shards, sreq.K)},
			{Name: "merge", TookMS: ms(done.Sub(fanned))},
		}}
		for i, r := range results {
			if r.resp != nil {
				resp.Profile.Stages = append(resp.Profile.Stages, api.Stage{
					Name: "shard " + strconv.Itoa(i), TookMS: ms(r.took),
					Detail: fmt.Sprintf("search %.3fms, generation %d, seq %d", ms(time.Duration(r.resp.TookNS)), r.resp.Generation, r.resp.Seq)})
			}
		}
	}
	return resp, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BuildQuery turns a request into the bleve query sent to shards: Query if
// given, else a match of Q on the default field, else match-all; with
// Filter as a non-scoring filter.
func BuildQuery(req *api.SearchRequest) (query.Query, error) {
	var q query.Query
	switch {
	case len(req.Query) > 0:
		var err error
		if q, err = query.ParseQuery(req.Query); err != nil {
			return nil, api.BadRequest("query: %v", err)
		}
	case req.Q != "":
		q = query.NewMatchQuery(req.Q)
	default:
		q = query.NewMatchAllQuery()
	}
	if len(req.Filter) > 0 {
		f, err := query.ParseQuery(req.Filter)
		if err != nil {
			return nil, api.BadRequest("filter: %v", err)
		}
		bq := query.NewBooleanQuery([]query.Query{q}, nil, nil)
		bq.AddFilter(f)
		q = bq
	}
	if v, ok := q.(query.ValidatableQuery); ok {
		if err := v.Validate(); err != nil {
			return nil, api.BadRequest("query: %v", err)
		}
	}
	return q, nil
}

type shardResult struct {
	resp *wire.ShardResponse
	err  error
	took time.Duration
}

// fanOut asks every shard in parallel, each with the request's deadline.
func (b *Broker) fanOut(ctx context.Context, index string, shards int, sreq *wire.ShardRequest) []shardResult {
	results := make([]shardResult, shards)
	proto := nats.NewMsg("")
	if err := wire.Encode(proto, sreq, b.cfg.CompressThreshold); err != nil {
		for i := range results {
			results[i].err = err
		}
		return results
	}
	deadline, _ := ctx.Deadline()
	dl := strconv.FormatInt(deadline.UnixNano(), 10)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			start := time.Now()
			msg := &nats.Msg{Subject: subject.Shard(index, i), Data: proto.Data, Header: nats.Header{}}
			if enc := proto.Header.Get(subject.HeaderEncoding); enc != "" {
				msg.Header.Set(subject.HeaderEncoding, enc)
			}
			msg.Header.Set(subject.HeaderDeadline, dl)
			results[i] = b.askShard(ctx, msg)
			results[i].took = time.Since(start)
		})
	}
	wg.Wait()
	return results
}

func (b *Broker) askShard(ctx context.Context, msg *nats.Msg) shardResult {
	reply, err := b.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return shardResult{err: api.Errorf(api.CodeUnavailable, "no searcher serves this shard")}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return shardResult{err: api.Errorf(api.CodeTimeout, "no answer before the deadline")}
	case err != nil:
		return shardResult{err: api.Errorf(api.CodeUnavailable, "%v", err)}
	}
	if code := reply.Header.Get(subject.HeaderError); code != "" {
		return shardResult{err: api.Errorf(api.Code(code), "%s", reply.Data)}
	}
	var resp wire.ShardResponse
	if err := wire.DecodeShardResponse(reply, &resp); err != nil {
		return shardResult{err: api.Errorf(api.CodeInternal, "%v", err)}
	}
	return shardResult{resp: &resp}
}

// merge combines shard responses: hits k-way by score (ties by id, so
// results are deterministic) or by sort values, then the from/size window;
// totals summed; facets merged.
func merge(out *api.SearchResponse, shards []*wire.ShardResponse, req *api.SearchRequest) {
	var all []api.Hit
	var facets search.FacetResults
	for _, s := range shards {
		out.Total += s.Total
		all = append(all, s.Hits...)
		if s.Facets != nil {
			if facets == nil {
				facets = search.FacetResults{}
			}
			facets.Merge(s.Facets)
		}
	}
	desc := sortDescending(req.Sort)
	slices.SortFunc(all, func(a, b api.Hit) int {
		if len(req.Sort) > 0 {
			for i := range min(len(a.Sort), len(b.Sort), len(desc)) {
				c := cmp.Compare(a.Sort[i], b.Sort[i])
				if desc[i] {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
		} else if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	from, size := req.From, req.EffectiveSize()
	if from > len(all) {
		from = len(all)
	}
	end := min(from+size, len(all))
	out.Hits = all[from:end]
	if out.Hits == nil {
		out.Hits = []api.Hit{}
	}
	if facets != nil {
		out.Facets = map[string]api.FacetResult{}
		for name, f := range facets {
			size := req.Facets[name].Size
			if size == 0 {
				size = 10
			}
			facets.Fixup(name, size)
			fr := api.FacetResult{Field: f.Field, Total: f.Total, Missing: f.Missing, Other: f.Other}
			if f.Terms != nil {
				for _, t := range f.Terms.Terms() {
					fr.Terms = append(fr.Terms, api.TermCount{Term: t.Term, Count: t.Count})
				}
			}
			out.Facets[name] = fr
		}
	}
}

// sortDescending reports, per sort key, whether it orders descending. Score
// sorts descending by default, as bleve does.
func sortDescending(keys []string) []bool {
	out := make([]bool, len(keys))
	for i, k := range keys {
		switch {
		case k == "_score":
			out[i] = true
		case k == "-_score":
			out[i] = false
		default:
			out[i] = len(k) > 0 && k[0] == '-'
		}
	}
	return out
}
