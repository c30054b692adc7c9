package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// The admin API's document figures (documents.count, documents.applied)
// are asked of the shards here, in the shard protocol, so that the
// protocol stays between Quarry's own roles: a client asks the admin
// service, whose team permissions it already has.

// shardAskTimeout bounds one figure's round trip to the shards when the
// request's context has no sooner deadline.
const shardAskTimeout = 2 * time.Second

// matchAll and matchNone are the queries of a count and of a look at a
// shard's applied sequence.
var (
	matchAll  = json.RawMessage(`{"match_all":{}}`)
	matchNone = json.RawMessage(`{"match_none":{}}`)
)

// countDocuments sums each shard's live document count, from one of its
// searchers: the statistics phase (bleve's own count, no search) on each
// shard's queue group. A count is no search, so the index's plugins have
// no say in it. It fails if any shard does not answer.
func (s *Service) countDocuments(ctx context.Context, def api.IndexDefinition) (*api.DocumentCount, error) {
	ctx, cancel := context.WithTimeout(ctx, shardAskTimeout)
	defer cancel()
	msg := &nats.Msg{}
	if err := wire.Encode(msg, &wire.ShardRequest{Query: matchAll, Phase: wire.PhaseStats}, 0); err != nil {
		return nil, err
	}
	counts := make([]uint64, def.Shards)
	errs := make([]error, def.Shards)
	var wg sync.WaitGroup
	for sh := range def.Shards {
		wg.Go(func() {
			reply, err := s.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject.Shard(def.Name, sh), Data: msg.Data, Header: msg.Header})
			switch {
			case errors.Is(err, nats.ErrNoResponders):
				errs[sh] = api.Errorf(api.CodeUnavailable, "no searcher serves shard %d", sh)
				return
			case err != nil:
				errs[sh] = api.Errorf(api.CodeUnavailable, "shard %d: %v", sh, err)
				return
			case reply.Header.Get(subject.HeaderError) != "":
				errs[sh] = api.Errorf(api.CodeUnavailable, "shard %d: %s", sh, reply.Data)
				return
			}
			var st wire.GlobalStats
			if err := wire.Decode(reply, &st); err != nil {
				errs[sh] = fmt.Errorf("shard %d: %w", sh, err)
				return
			}
			counts[sh] = st.DocCount
		})
	}
	wg.Wait()
	out := &api.DocumentCount{Index: def.Name}
	for sh := range counts {
		if errs[sh] != nil {
			return nil, errs[sh]
		}
		out.Docs += counts[sh]
	}
	return out, nil
}

// appliedSequences asks one searcher of each shard (one of the shard's
// queue group) which stream sequence it has applied: a shard's answer to
// a query that reads nothing carries it, at no cost. A shard that does
// not answer in time is not served.
func (s *Service) appliedSequences(ctx context.Context, def api.IndexDefinition) (*api.ShardsApplied, error) {
	ctx, cancel := context.WithTimeout(ctx, shardAskTimeout)
	defer cancel()
	req := &nats.Msg{}
	if err := wire.Encode(req, &wire.ShardRequest{Query: matchNone}, 0); err != nil {
		return nil, err
	}
	out := &api.ShardsApplied{Index: def.Name, Shards: make([]api.ShardApplied, def.Shards)}
	var wg sync.WaitGroup
	for sh := range def.Shards {
		out.Shards[sh].Shard = sh
		wg.Go(func() {
			reply, err := s.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject.Shard(def.Name, sh), Data: req.Data, Header: req.Header})
			if err != nil || reply.Header.Get(subject.HeaderError) != "" {
				return
			}
			var r wire.ShardResponse
			if wire.DecodeShardResponse(reply, &r) != nil {
				return
			}
			out.Shards[sh].Served, out.Shards[sh].Seq = true, r.Seq
		})
	}
	wg.Wait()
	return out, nil
}
