package planner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// A regexp or wildcard whose automaton would take a shard most of a
// second to build (found by FuzzHTTPSearch: "(a+)+b.*x{1000}" held both
// shards past the deadline, and the next searches waited) is refused
// before any shard is asked; ordinary patterns pass, and the check is
// quick whatever the pattern.
func TestPlanRefusesCostlyPatterns(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 2}
	cases := []struct {
		query string
		want  error // nil: planned
		msg   string
	}{
		{`{"regexp":"pad.*","field":"name"}`, nil, ""},
		{`{"regexp":"[a-z]*[0-9]{3}"}`, nil, ""},
		{`{"regexp":"(abc|def){20}"}`, nil, ""},
		{`{"regexp":".*x.{6}"}`, nil, ""},
		{`{"wildcard":"*o*o*o*"}`, nil, ""},
		{`{"wildcard":"noodle?"}`, nil, ""},
		{`{"query":"name:/pad.*/ AND noodle*"}`, nil, ""},
		{`{"regexp":"(a+)+b.*x{1000}"}`, api.ErrQueryTooComplex, "compiles to 1010 instructions, over the limit of 512"},
		{`{"regexp":".*x.{10}"}`, api.ErrQueryTooComplex, "needs an automaton of more than 128 states"},
		{`{"regexp":"(a|b)*a(a|b){12}"}`, api.ErrQueryTooComplex, "more than 128 states"},
		{`{"wildcard":"*a??????????"}`, api.ErrQueryTooComplex, `the wildcard "*a??????????" needs an automaton`},
		{`{"query":"name:/.*x.{10}/"}`, api.ErrQueryTooComplex, "more than 128 states"},
		{`{"conjuncts":[{"match":"x"},{"regexp":".*y.{12}"}]}`, api.ErrQueryTooComplex, "more than 128 states"},
		{`{"regexp":"x{1001}"}`, api.ErrBadRequest, "invalid repeat count"},
		// What the shards' automaton cannot run: refused here, not
		// failed there as the shard's own error.
		{`{"regexp":"a*?b"}`, api.ErrBadRequest, "lazy quantifiers"},
		{`{"regexp":"noodles$"}`, api.ErrBadRequest, "anchors (^, $) are not supported"},
		{`{"regexp":"^noodles"}`, nil, ""}, // a leading ^ is dropped, as bleve does
		{`{"regexp":"\\bpad"}`, api.ErrBadRequest, "word boundaries"},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := p.Plan(&api.SearchRequest{Query: json.RawMessage(c.query)}, def, nil)
		if took := time.Since(start); took > 200*time.Millisecond {
			t.Errorf("%s: the check took %s", c.query, took)
		}
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.query, err)
			}
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v containing %q", c.query, err, c.want, c.msg)
		}
	}
}

// A date range the shards could not parse is refused by the planner, in
// the API's words: on a shard it was the shard's own failure, a 500 when
// the search sorts by fields (no statistics phase to call it the
// request's fault). Found by FuzzHTTPSearch: {"query":{"start":"0"},"sort":[""]}.
func TestPlanRefusesBadDates(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 2}
	cases := []struct{ query, want string }{
		{`{"start":"2024-01-31T00:00:00Z","end":"2024-02-01","field":"opened"}`, ""},
		{`{"start":"0"}`, `query: a date range's start "0" is not a date`},
		{`{"start":"2024-01-01","end":"yesterday","field":"d"}`, `a date range's end "yesterday" is not a date`},
		{`{"start":"1500-01-01"}`, `a date range's start "1500-01-01" is out of the range of dates an index holds`},
		{`{"conjuncts":[{"match":"x"},{"end":"soon","field":"d"}]}`, `end "soon" is not a date`},
		{`{"start":"whenever","datetime_parser":"custom"}`, ""}, // the mapping's parser: the shards know it
	}
	for _, c := range cases {
		_, err := p.Plan(&api.SearchRequest{Query: json.RawMessage(c.query), Sort: []string{"opened"}}, def, nil)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.query, err)
			}
			continue
		}
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a bad request containing %q", c.query, err, c.want)
		}
	}
}
