package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/planner"
)

func ids(h []api.Hit) []string {
	var out []string
	for _, x := range h {
		out = append(out, x.ID)
	}
	return out
}

func TestDecodeRequest(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"q":"x","size":5}`, ""},
		{`{"size":20000}`, ""}, // the window is the index's limit: the planner's
		{`{"q":`, "malformed search request"},
		{`{"q":"x"} {"q":"y"}`, "data after the JSON value"},
		{`{"size":"ten"}`, "size must be an integer, got a string"},
		{`{"from":-1}`, "from must be >= 0"},
		{`{"qq":"typo"}`, `unknown field "qq"`},
		{`{"facets":{"f":{"size":3}}}`, `facet "f": field is required`},
		{`[1]`, "malformed search request: expected an object, got an array"},
		{`{"q":"` + strings.Repeat("x", MaxRequestBytes) + `"}`, "over the limit"},
		// Strict: what encoding/json would take quietly or rewrite.
		{`{"Q":"x"}`, `unknown field "Q" (field names are case-sensitive: did you mean "q"?)`},
		{`{"q":"a","q":"b"}`, `duplicate field "q"`},
		{`{"facets":{"f":{"field":"a","Size":2}}}`, `unknown field "Size" in facets.f`},
		{"{\"q\":\"caf\xe9\"}", "invalid UTF-8 in q at byte 9"},
		{"{\"sort\":[\"-pr\xffice\"]}", "invalid UTF-8 in sort[0]"},
		{"{\"query\":{\"match\":\"x\",\"field\":\"n\xff\"}}", "invalid UTF-8 in query.field"},
		{`{"q":"\udc00"}`, "lone UTF-16 surrogate"},
	}
	for _, c := range cases {
		_, err := DecodeRequest([]byte(c.body))
		if c.want == "" {
			if err != nil {
				t.Errorf("%.40s: %v", c.body, err)
			}
			continue
		}
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s: got %v, want a bad request naming %q", c.body, err, c.want)
		}
		if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "of type") {
			t.Errorf("%.40s: %q names Go types", c.body, err)
		}
	}
}

// worstRequests are seeds for the search door's fuzzers: huge q, deep
// nesting, invalid UTF-8, duplicate and wrong-case keys, wrong types.
func worstRequests() [][]byte {
	return [][]byte{
		[]byte(`{"q":"spicy","size":3,"from":1,"fields":["*"],"facets":{"c":{"field":"cuisine"}},"sort":["-price","_score"]}`),
		[]byte(`{"query":{"match":"x"},"allow_partial":false,"timeout_ms":5}`),
		[]byte(`{"q":"` + strings.Repeat("noodle ", 1200) + `"}`),
		[]byte(`{"query":` + strings.Repeat(`{"conjuncts":[`, 200) + `{"match":"x"}` + strings.Repeat(`]}`, 200) + `}`),
		[]byte(`{"query":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`),
		[]byte("{\"q\":\"col\xff\",\"sort\":[\"\xfe\"]}"),
		[]byte(`{"q":"a","q":"b","Q":"c"}`),
		[]byte(`{"size":"ten","from":[],"facets":1,"timeout_ms":1e99}`),
		[]byte(`{"query":{"query":"a AND (b OR"}}`),
		[]byte(`{"query":{"regexp":"[","field":"name"}}`),
		[]byte(`{"query":{"wildcard":"*a*b*c*"},"filter":{"start":"yesterday","field":"d"}}`),
		[]byte(`{"query":{"match":"x","boost":"high","fuzziness":"lots"}}`),
		[]byte(`{"query":{"disjuncts":[{"match":"x"}],"min":99}}`),
		[]byte(`{"size":0,"facets":{"a":{"field":"x","size":100000}}}`),
		[]byte(`{"variant":{"plugin":"nope","digest":"sha256:00"}}`),
		[]byte(`{"q":"\ud800\udc00\ud800"}`),
		[]byte(`null`),
		[]byte(``),
	}
}

// noInternalWords fails when an error shows an internal detail: Go's type
// names, encoding/json's and jsoniter's words, pointers.
func noInternalWords(t *testing.T, err error) {
	t.Helper()
	for _, w := range []string{"Go struct", "Go value", "of type", "json: ", "interface {}", "0xc000", "readObjectStart", "error found in #"} {
		if strings.Contains(err.Error(), w) {
			t.Fatalf("%q shows an internal detail (%s)", err, w)
		}
	}
}

// FuzzDecodeRequest: the NATS search door up to the plan (decode, then
// plan against an index with a mapping and query settings). Whatever the
// bytes, no panic, an answer within a second, and either a plan or the
// caller's own error (bad request, too complex): never an internal one.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range worstRequests() {
		f.Add(seed)
	}
	p, err := planner.New(planner.Config{})
	if err != nil {
		f.Fatal(err)
	}
	def := api.IndexDefinition{Name: "menu", Shards: 3, Query: api.QuerySettings{
		Fields: []api.FieldBoost{{Field: "name", Boost: 2}, {Field: "description"}}, Fuzziness: 1, PhraseBoost: 1.5}}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		defer func() {
			if took := time.Since(start); took > time.Second {
				t.Fatalf("took %s", took)
			}
		}()
		req, err := DecodeRequest(data)
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) && !errors.Is(err, api.ErrQueryTooComplex) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			noInternalWords(t, err)
			return
		}
		if req.Size < api.NoHits || req.From < 0 {
			t.Fatalf("accepted out-of-range request %+v", req)
		}
		plan, err := p.Plan(req, def, nil)
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) && !errors.Is(err, api.ErrQueryTooComplex) {
				t.Fatalf("plan: error of the wrong kind: %v", err)
			}
			noInternalWords(t, err)
			return
		}
		if plan.K > api.MaxWindow || plan.From+plan.Size > api.MaxWindow || !json.Valid(plan.Query) {
			t.Fatalf("bad plan: %+v", plan)
		}
	})
}

// A shard's internal error (bleve's words, a Go error) reaches the caller
// as "internal error on shard N (request id …)", its detail in the log
// under that id; the caller's own errors and timeouts keep their words.
func TestShardErrorsHideInternals(t *testing.T) {
	var logged bytes.Buffer
	b := &Broker{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))}}
	ctx := requestid.With(context.Background(), "req-7")
	plan := &planner.Plan{Index: "menu", Shards: []int{0, 1}}
	detail := "search shard 1: field stat for bm25 not present name"
	cases := []struct {
		name string
		errs []error
		code api.Code
		want string
	}{
		{"internal", []error{nil, api.Errorf(api.CodeInternal, "%s", detail)}, api.CodeInternal,
			"internal error on shard 1 (request id req-7); 1 of 2 shards failed"},
		{"not an api error", []error{nil, errors.New(detail)}, api.CodeInternal, "internal error on shard 1 (request id req-7)"},
		{"timeout", []error{nil, api.Errorf(api.CodeTimeout, "no answer before the deadline")}, api.CodeTimeout, "no answer before the deadline"},
		{"bad request", []error{api.BadRequest("bad query: x"), nil}, api.CodeBadRequest, "bad query: x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logged.Reset()
			results := make([]fanout.Result, len(c.errs))
			info := api.ShardsInfo{Total: len(c.errs)}
			for i, err := range c.errs {
				if err == nil {
					continue
				}
				results[i].Err = b.shardError(ctx, plan, i, err)
				info.Failed++
				info.Failures = append(info.Failures, api.ShardFailure{Shard: i, Reason: results[i].Err.Error()})
			}
			err := shardsFailed(info, results)
			if api.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (%s), want %s %q", err, api.CodeOf(err), c.code, c.want)
			}
			if strings.Contains(err.Error(), "bm25") || strings.Contains(info.Failures[0].Reason, "bm25") {
				t.Fatalf("the detail reached the caller: %v / %+v", err, info.Failures)
			}
			if c.code == api.CodeInternal && (!strings.Contains(logged.String(), "bm25") || !strings.Contains(logged.String(), "request_id=req-7")) {
				t.Fatalf("the detail is not in the log with the request id: %s", logged.String())
			}
		})
	}
}
