package querystats

import (
	"context"
	"strings"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
)

// WithTermLimit bounds the leaf term searchers one search may build (the
// index's query.limits.max_terms): bleve's own limit, which counts every
// term a fuzzy, prefix, wildcard, regexp or range query expands to, so a
// query that would read half the dictionary fails before it reads it.
// bleve's SearchInContext installs the counter; a caller building
// searchers itself (the statistics phase) installs it with
// search.ContextWithTermSearchersCounter.
func WithTermLimit(ctx context.Context, max int) context.Context {
	if max <= 0 {
		return ctx
	}
	return context.WithValue(ctx, search.MaxTermSearchersKey, max)
}

// TooManyTerms turns bleve's term-searcher limit error into the API's
// query_too_complex, and returns nil for any other error.
func TooManyTerms(err error, shard, max int) error {
	if err == nil || !strings.Contains(err.Error(), "TooManyTermSearchers") {
		return nil
	}
	return api.Errorf(api.CodeQueryTooComplex, "query too complex: it reads more than %d terms on shard %d once its fuzzy, prefix, wildcard, regexp and range terms expand (query.limits.max_terms); make those terms narrower", max, shard)
}
