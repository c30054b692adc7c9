package client

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

// countTimeout bounds liveDocs when ctx has no sooner deadline.
const countTimeout = 2 * time.Second

// matchAll is the query of a count.
var matchAll = json.RawMessage(`{"match_all":{}}`)

// liveDocs returns the documents an index holds now: each shard's count
// from one of its searchers, summed. It asks for the shard protocol's
// statistics phase (bleve's own count of live documents, no search) on
// each shard's queue group directly, not through a broker: a count is no
// search, so the index's plugins have no say in it. It fails if any shard
// does not answer.
func (c *Client) liveDocs(ctx context.Context, def api.IndexDefinition) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	msg := &nats.Msg{}
	if err := wire.Encode(msg, &wire.ShardRequest{Query: matchAll, Phase: wire.PhaseStats}, 0); err != nil {
		return 0, err
	}
	counts := make([]uint64, def.Shards)
	errs := make([]error, def.Shards)
	var wg sync.WaitGroup
	for sh := range def.Shards {
		wg.Go(func() {
			reply, err := c.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject.Shard(def.Name, sh), Data: msg.Data, Header: msg.Header})
			switch {
			case errors.Is(err, nats.ErrNoResponders):
				errs[sh] = fmt.Errorf("no searcher serves shard %d", sh)
				return
			case err != nil:
				errs[sh] = fmt.Errorf("shard %d: %w", sh, err)
				return
			case reply.Header.Get(subject.HeaderError) != "":
				errs[sh] = fmt.Errorf("shard %d: %s", sh, reply.Data)
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
	var total uint64
	for sh := range counts {
		if errs[sh] != nil {
			return 0, errs[sh]
		}
		total += counts[sh]
	}
	return total, nil
}
