package relevance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api"
)

// maxLineErrors is how many refused lines one error lists.
const maxLineErrors = 10

// maxIDBytes caps a rated document id, as document ids are capped.
const maxIDBytes = 512

// line is one judgement line as written: JudgedQuery without Line, so a
// "line" key is refused as unknown.
type line struct {
	Q       string          `json:"q"`
	Query   json.RawMessage `json:"query,omitempty"`
	Filter  json.RawMessage `json:"filter,omitempty"`
	Context json.RawMessage `json:"context,omitempty"`
	Ratings map[string]int  `json:"ratings"`
}

// Decode reads a judgement list: NDJSON, one JSON object a line with
// "q" (or "query"), optional "query", "filter" and "context" as in a
// search request, and "ratings", an object of document ids to grades 0
// to api.MaxRating. Blank lines are skipped. Every line is checked
// before anything is returned: a list with a bad line is refused whole,
// with a CodeBadRequest error naming each bad line (up to 10) and what
// is wrong with it.
func Decode(r io.Reader) ([]api.JudgedQuery, error) {
	br := bufio.NewReader(io.LimitReader(r, api.MaxJudgementBytes+1))
	var (
		out   []api.JudgedQuery
		errs  []string
		more  int
		seen  = map[string]int{} // a query's key → its first line
		total int
	)
	bad := func(n int, format string, args ...any) {
		if len(errs) < maxLineErrors {
			errs = append(errs, fmt.Sprintf("line %d: %s", n, fmt.Sprintf(format, args...)))
		} else {
			more++
		}
	}
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		total += len(raw)
		if total > api.MaxJudgementBytes {
			return nil, api.BadRequest("judgement list is over the limit of %d bytes", api.MaxJudgementBytes)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read judgement list: %w", err)
		}
		if b := bytes.TrimSpace(raw); len(b) > 0 {
			if q, why := decodeLine(b); why != "" {
				bad(n, "%s", why)
			} else if first, dup := seen[queryKey(q)]; dup {
				bad(n, "the same query as line %d (merge their ratings into one line)", first)
			} else {
				seen[queryKey(q)] = n
				q.Line = n
				out = append(out, q)
				if len(out) > api.MaxJudgedQueries {
					return nil, api.BadRequest("judgement list has over %d queries (line %d)", api.MaxJudgedQueries, n)
				}
			}
		}
		if err != nil { // io.EOF
			break
		}
	}
	if len(errs) > 0 {
		msg := "judgement list refused: " + strings.Join(errs, "; ")
		if more > 0 {
			msg += fmt.Sprintf("; and %d more", more)
		}
		return nil, api.BadRequest("%s", msg)
	}
	if len(out) == 0 {
		return nil, api.BadRequest("judgement list is empty: want one JSON object a line, {\"q\": \"...\", \"ratings\": {\"doc id\": 0-%d}}", api.MaxRating)
	}
	return out, nil
}

// decodeLine decodes and checks one line; why says what is wrong.
func decodeLine(b []byte) (api.JudgedQuery, string) {
	var l line
	if err := api.DecodeStrict("judgement", b, &l); err != nil {
		return api.JudgedQuery{}, err.Error()
	}
	q := api.JudgedQuery{Q: l.Q, Query: l.Query, Filter: l.Filter, Context: l.Context, Ratings: l.Ratings}
	if why := Check(&q); why != "" {
		return q, why
	}
	return q, ""
}

// Check says what is wrong with a judged query, or "".
func Check(q *api.JudgedQuery) string {
	if strings.TrimSpace(q.Q) == "" && len(q.Query) == 0 {
		return `"q" (or "query") is required`
	}
	for name, v := range map[string]json.RawMessage{"query": q.Query, "filter": q.Filter, "context": q.Context} {
		if len(v) > 0 && (bytes.TrimSpace(v)[0] != '{') && string(bytes.TrimSpace(v)) != "null" {
			return name + " must be a JSON object"
		}
	}
	if q.Ratings == nil {
		return `"ratings" is required: an object of document ids to grades 0-3`
	}
	if len(q.Ratings) == 0 {
		return `"ratings" is empty: rate at least one document`
	}
	if len(q.Ratings) > api.MaxRatingsPerQuery {
		return fmt.Sprintf("%d ratings, over the limit of %d a query", len(q.Ratings), api.MaxRatingsPerQuery)
	}
	for _, id := range sortedIDs(q.Ratings) { // the same message every time
		g := q.Ratings[id]
		switch {
		case id == "":
			return "ratings: a document id is empty"
		case len(id) > maxIDBytes:
			return fmt.Sprintf("ratings: document id %.20q… is over %d bytes", id, maxIDBytes)
		case !utf8.ValidString(id):
			return fmt.Sprintf("ratings: document id %q is not valid UTF-8", id)
		case g < 0 || g > api.MaxRating:
			return fmt.Sprintf("ratings[%q] must be 0 to %d, got %d", id, api.MaxRating, g)
		}
	}
	return ""
}

// queryKey identifies a judged query: two lines with the same key are the
// same search.
func queryKey(q api.JudgedQuery) string {
	return strings.Join([]string{q.Q, string(compact(q.Query)), string(compact(q.Filter)), string(compact(q.Context))}, "\x00")
}

func compact(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// Request is the search request a judged query makes: its text, query,
// filter and context, the top k hits, no stored fields.
func Request(q *api.JudgedQuery, k int) *api.SearchRequest {
	return &api.SearchRequest{Q: q.Q, Query: q.Query, Filter: q.Filter, Context: q.Context, Size: k}
}
