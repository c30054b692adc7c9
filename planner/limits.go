package planner

import (
	"encoding/json"
	"unicode"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
)

// A request's cost is checked here, before anything is sent to a shard,
// against the index's api.QueryLimits; what only a shard can know (how far
// fuzzy, prefix, wildcard, regexp and range terms expand in its
// dictionary) is bounded on the shard by bleve's term-searcher limit, set
// to the same MaxTerms (Plan.MaxTerms).

// checkRequest checks the parts of a request that cost before a query is
// built: the sizes of q, query and filter, their nesting, the window, the
// facets, the sort keys and the fields.
func checkRequest(req *api.SearchRequest, l api.QueryLimits) error {
	if n := len(req.Q); n > l.MaxQBytes {
		return api.TooComplex("q's length in bytes", n, "max_q_bytes", l.MaxQBytes)
	}
	for _, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"query", req.Query}, {"filter", req.Filter}} {
		if n := len(part.raw); n > l.MaxQueryBytes {
			return api.TooComplex(part.name+"'s length in bytes", n, "max_query_bytes", l.MaxQueryBytes)
		}
		if d := depth(part.raw); d > l.MaxDepth {
			return api.TooComplex(part.name+"'s nesting depth", d, "max_depth", l.MaxDepth)
		}
	}
	if w := req.From + req.EffectiveSize(); w > l.MaxWindow {
		return api.TooComplex("from+size", w, "max_window", l.MaxWindow)
	}
	if n := len(req.Facets); n > l.MaxFacets {
		return api.TooComplex("the number of facets", n, "max_facets", l.MaxFacets)
	}
	for name, f := range req.Facets {
		if f.Size > l.MaxFacetSize {
			return api.TooComplex("facet "+name+"'s size", f.Size, "max_facet_size", l.MaxFacetSize)
		}
	}
	if n := len(req.Sort); n > l.MaxSort {
		return api.TooComplex("the number of sort keys", n, "max_sort", l.MaxSort)
	}
	if n := len(req.Fields); n > l.MaxFields {
		return api.TooComplex("the number of fields", n, "max_fields", l.MaxFields)
	}
	return nil
}

// depth is how deeply a JSON value nests objects and arrays (0 for a
// scalar), read in one pass without decoding.
func depth(raw []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// checkQuery checks a built query tree: its clauses, and the terms it
// reads as far as the planner can count them (a match or phrase reads one
// per word of its text, per field).
func checkQuery(q query.Query, l api.QueryLimits) error {
	var c cost
	if err := c.add(q, 0); err != nil {
		return err
	}
	if c.clauses > l.MaxClauses {
		return api.TooComplex("the number of query clauses", c.clauses, "max_clauses", l.MaxClauses)
	}
	if c.terms > l.MaxTerms {
		return api.TooComplex("the number of terms the query reads", c.terms, "max_terms", l.MaxTerms)
	}
	return nil
}

// cost counts a query tree.
type cost struct {
	clauses, terms int
}

// maxTreeDepth stops walking a tree deeper than any index may allow
// (checkRequest refused deeper JSON already; a query string cannot nest).
const maxTreeDepth = 256

func (c *cost) add(q query.Query, d int) error {
	if d > maxTreeDepth {
		return api.TooComplex("the query's nesting depth", d, "max_depth", api.MaxLimits.MaxDepth)
	}
	c.clauses++
	switch q := q.(type) {
	case *query.BooleanQuery:
		for _, sub := range []query.Query{q.Must, q.Should, q.MustNot, q.Filter} {
			if sub != nil {
				if err := c.add(sub, d+1); err != nil {
					return err
				}
			}
		}
	case *query.ConjunctionQuery:
		for _, sub := range q.Conjuncts {
			if err := c.add(sub, d+1); err != nil {
				return err
			}
		}
	case *query.DisjunctionQuery:
		for _, sub := range q.Disjuncts {
			if err := c.add(sub, d+1); err != nil {
				return err
			}
		}
	case *query.QueryStringQuery:
		parsed, err := q.Parse()
		if err != nil {
			return api.BadRequest("query string: %v", err)
		}
		c.clauses--
		return c.add(parsed, d)
	case *query.MatchQuery:
		c.terms += words(q.Match)
	case *query.MatchPhraseQuery:
		c.terms += words(q.MatchPhrase)
	case *query.PhraseQuery:
		c.terms += len(q.Terms)
	case *query.MultiPhraseQuery:
		for _, t := range q.Terms {
			c.terms += len(t)
		}
	case *query.RegexpQuery:
		c.terms++ // its expansion the shard bounds
		return checkPattern(q.Regexp, false)
	case *query.WildcardQuery:
		c.terms++
		return checkPattern(q.Wildcard, true)
	case *query.DateRangeStringQuery:
		c.terms++
		return checkDates(q)
	default:
		c.terms++ // a term, or a query whose expansion the shard bounds
	}
	return nil
}

// words counts the words of a text as an analyzer would split it, roughly:
// runs of letters and digits.
func words(text string) int {
	n, in := 0, false
	for _, r := range text {
		w := unicode.IsLetter(r) || unicode.IsDigit(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}
