package planner

import (
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
)

// defaultDateParser is the parser a date range query's start and end go
// through on every shard when it names none (bleve's
// query.QueryDateTimeParser, whatever the index's mapping).
var defaultDateParser = sync.OnceValue(func() analysis.DateTimeParser {
	return mapping.NewIndexMapping().DateTimeParserNamed(query.QueryDateTimeParser)
})

// checkDates refuses a date range whose start or end the shards could not
// parse, or out of the range they index (bleve, on a shard, reports it as
// its own failure). A query naming its own parser (one of the mapping's)
// is left to the shards.
func checkDates(q *query.DateRangeStringQuery) error {
	p := defaultDateParser()
	if q.DateTimeParser != "" || p == nil {
		return nil
	}
	for _, end := range []struct{ name, value string }{{"start", q.Start}, {"end", q.End}} {
		if end.value == "" {
			continue
		}
		t, _, err := p.ParseDateTime(end.value)
		if err != nil {
			return api.BadRequest(`query: a date range's %s %q is not a date: use RFC 3339 ("2024-01-31T00:00:00Z") or a date ("2024-01-31")`, end.name, clip(end.value))
		}
		if t.Before(query.MinRFC3339CompatibleTime) || t.After(query.MaxRFC3339CompatibleTime) {
			return api.BadRequest("query: a date range's %s %q is out of the range of dates an index holds (%s to %s)", end.name, clip(end.value),
				query.MinRFC3339CompatibleTime.Format("2006-01-02"), query.MaxRFC3339CompatibleTime.Format("2006-01-02"))
		}
	}
	return nil
}
