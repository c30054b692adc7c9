package querystats

import (
	"sync"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Parsing a bleve query (query.ParseQuery: encoding/json, by reflection,
// level by level) cost 7.5% of the searchers' CPU in a closed loop of
// repeated queries (quarry bench --profile-dir), twice per search on a
// statistics cache miss, once per shard. A query's JSON parses to the
// same query every time, and bleve only reads a query when it searches,
// so parsed queries are kept, by their JSON, for every replica of the
// process: the shards of one index get the same query.
//
// The cache is bounded by count and by each query's size: a parsed query
// holds about five times its JSON, so at most about 10 MB.
const (
	parsedMax      = 1024    // queries kept
	parsedMaxBytes = 2 << 10 // a longer query's JSON is parsed each time
)

var parsed = struct {
	sync.Mutex
	m map[string]query.Query
}{m: make(map[string]query.Query, parsedMax)}

// RequestQuery returns a shard request's query, parsed and validated
// (parseQuery), once its k is within bounds: what the statistics phase
// (Count) and ListTerms read, and what internal/shard's BuildRequest
// makes a bleve search request of.
func RequestQuery(req *wire.ShardRequest) (query.Query, error) {
	if req.K < 0 || req.K > api.MaxWindow {
		return nil, api.BadRequest("k must be between 0 and %d, got %d", api.MaxWindow, req.K)
	}
	return parseQuery(req.Query)
}

// parseQuery parses and validates a shard request's query, with its
// phrases searched without bleve's maps (exactPhrases), from the cache
// when it was parsed before.
func parseQuery(raw []byte) (query.Query, error) {
	if len(raw) <= parsedMaxBytes {
		parsed.Lock()
		q, ok := parsed.m[string(raw)] // no allocation for the lookup
		parsed.Unlock()
		if ok {
			return q, nil
		}
	}
	q, err := query.ParseQuery(raw)
	if err != nil {
		return nil, api.BadRequest("bad query: %v", err)
	}
	if v, ok := q.(query.ValidatableQuery); ok {
		if err := v.Validate(); err != nil {
			return nil, api.BadRequest("bad query: %v", err)
		}
	}
	q = exactPhrases(q)
	if len(raw) <= parsedMaxBytes {
		parsed.Lock()
		if len(parsed.m) >= parsedMax {
			for k := range parsed.m { // drop about an eighth, at random
				delete(parsed.m, k)
				if len(parsed.m) < parsedMax*7/8 {
					break
				}
			}
		}
		parsed.m[string(raw)] = q
		parsed.Unlock()
	}
	return q, nil
}
