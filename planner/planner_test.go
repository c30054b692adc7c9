package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/quarrysearch/quarry/api"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/plans")

type planCase struct {
	Request api.SearchRequest   `json:"request"`
	Index   api.IndexDefinition `json:"index"`
	Hints   *Hints              `json:"hints"`
}

func testPlanner(t *testing.T) *Planner {
	t.Helper()
	p, err := New(Config{Hedge: Hedge{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGoldenPlans plans every testdata/plans/*.json case and compares with
// its .golden file (go test ./planner -update rewrites them).
func TestGoldenPlans(t *testing.T) {
	p := testPlanner(t)
	cases, err := filepath.Glob("testdata/plans/*.json")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no plan cases: %v", err)
	}
	for _, path := range cases {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var c planCase
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			plan, err := p.Plan(&c.Request, c.Index, c.Hints)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(plan, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(path, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./planner -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("plan differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 2}
	cases := []struct {
		name string
		req  api.SearchRequest
		def  api.IndexDefinition
		hint *Hints
		want string
	}{
		{"negative size", api.SearchRequest{Size: -2}, def, nil, "size"},
		{"bad scoring", api.SearchRequest{Q: "x", Scoring: "dfs"}, def, nil, `scoring must be "exact" or "shard", got "dfs"`},
		{"bad query", api.SearchRequest{Query: json.RawMessage(`{"nope":1}`)}, def, nil, "query"},
		{"bad filter", api.SearchRequest{Q: "x", Filter: json.RawMessage(`"x"`)}, def, nil, "filter"},
		{"bad operator", api.SearchRequest{Q: "x"}, api.IndexDefinition{Shards: 1, Query: api.QuerySettings{Operator: "xor"}}, nil, "operator"},
		{"bad fuzziness", api.SearchRequest{Q: "x"}, api.IndexDefinition{Shards: 1, Query: api.QuerySettings{Fuzziness: 3}}, nil, "fuzziness"},
		{"bad hint query", api.SearchRequest{Q: "x"}, def, &Hints{Query: json.RawMessage(`[]`)}, "hints.query"},
		{"match operator", api.SearchRequest{Query: json.RawMessage(`{"match":"x","operator":"xor"}`)}, def, nil, `query: a match query's operator must be "or" or "and"`},
	}
	for _, c := range cases {
		_, err := p.Plan(&c.req, c.def, c.hint)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a bad request naming %q", c.name, err, c.want)
		}
	}
}

// A bleve query of the wrong shape is refused in the API's words: the
// field and what it should be, never encoding/json's Go type names
// ("Go struct field .Alias.boost of type query.Boost").
func TestPlanQueryErrorsInAPIWords(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 1}
	cases := []struct{ query, want string }{
		{`{"match":"x","boost":"high"}`, "query: boost must be a number, got a string"},
		{`{"match":5}`, "query: match must be a string, got a number"},
		{`{"term":["a"]}`, "query: term must be a string, got an array"},
		{`{"conjuncts":"x"}`, "query: conjuncts must be an array, got a string"},
		{`{"disjuncts":[{"match":"x"}],"min":"2"}`, "query: min must be a number, got a string"},
		{`{"bool":1}`, "query: bool must be true or false, got a number"},
		{`[]`, "query: expected an object, got an array"},
		{`{"geometry":{"shape":5},"field":"g"}`, "query: a geo shape's geometry is not valid GeoJSON"},
		{`{"cidr":"10.0.0/8","field":"ip"}`, `query: an ip range query's cidr "10.0.0/8" is not a network or an IP address`},
		{`{"match":"x","feild":"name"}`, `query: a match query has no key "feild" (it has analyzer, boost, field, fuzziness, match, operator, prefix_length)`},
	}
	for _, c := range cases {
		_, err := p.Plan(&api.SearchRequest{Query: json.RawMessage(c.query)}, def, nil)
		if !errors.Is(err, api.ErrBadRequest) || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.query, err, c.want)
		}
	}
}

// Every cost limit refuses a request over it with query_too_complex,
// naming the limit and the value, and lets one at the limit through.
func TestPlanLimits(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 2, Query: api.QuerySettings{Fields: []api.FieldBoost{{Field: "a"}, {Field: "b"}}, PhraseBoost: 2}}
	small := def
	small.Query.Limits = api.QueryLimits{MaxQBytes: 20, MaxQueryBytes: 200, MaxDepth: 4, MaxClauses: 6, MaxTerms: 12, MaxWindow: 50, MaxFacets: 2, MaxFacetSize: 10, MaxSort: 2, MaxFields: 3}
	nest := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat(`{"conjuncts":[`, n) + `{"term":"x"}` + strings.Repeat(`]}`, n))
	}
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("w ", n)) }
	facets := func(n, size int) map[string]api.FacetRequest {
		out := map[string]api.FacetRequest{}
		for i := range n {
			out[fmt.Sprint("f", i)] = api.FacetRequest{Field: "a", Size: size}
		}
		return out
	}
	cases := []struct {
		name string
		req  api.SearchRequest
		def  api.IndexDefinition
		hint *Hints
		want string // "" when the request is within the limits
	}{
		{"q at the default limit", api.SearchRequest{Q: strings.Repeat("x", 4096)}, def, nil, ""},
		{"q over the default limit", api.SearchRequest{Q: strings.Repeat("x", 4097)}, def, nil, "q's length in bytes is 4097, over the index's limit of 4096 (query.limits.max_q_bytes)"},
		{"a megabyte of q", api.SearchRequest{Q: strings.Repeat("word ", 200000)}, def, nil, "max_q_bytes"},
		{"words × fields × phrase at the limit", api.SearchRequest{Q: words(3)}, small, nil, ""},
		{"words × fields × phrase over the limit", api.SearchRequest{Q: words(4)}, small, nil, "terms the query reads is 16, over the index's limit of 12 (query.limits.max_terms)"},
		{"2,000 words, default limits", api.SearchRequest{Q: words(2000)}, def, nil, "max_terms"},
		{"nesting at the limit", api.SearchRequest{Query: nest(1)}, small, nil, ""},
		{"nesting over the limit", api.SearchRequest{Query: nest(3)}, small, nil, "query's nesting depth is 7, over the index's limit of 4 (query.limits.max_depth)"},
		{"conjuncts 4,900 deep", api.SearchRequest{Query: nest(4900)}, def, nil, "max_query_bytes"},
		{"filter nesting", api.SearchRequest{Q: "x", Filter: nest(3)}, small, nil, "filter's nesting depth"},
		{"clauses", api.SearchRequest{Query: json.RawMessage(`{"query":"a b c d e f g"}`)}, small, nil, "query clauses is 9, over the index's limit of 6"},
		{"query string terms", api.SearchRequest{Query: json.RawMessage(`{"query":"a b c d"}`)}, small, nil, ""},
		{"window", api.SearchRequest{From: 45, Size: 10}, small, nil, "from+size is 55, over the index's limit of 50 (query.limits.max_window)"},
		{"default window", api.SearchRequest{From: api.MaxWindow}, def, nil, "max_window"},
		{"facets", api.SearchRequest{Facets: facets(3, 1)}, small, nil, "the number of facets is 3, over the index's limit of 2 (query.limits.max_facets)"},
		{"facet size", api.SearchRequest{Facets: facets(1, 11)}, small, nil, "facet f0's size is 11, over the index's limit of 10"},
		{"sort keys at the limit", api.SearchRequest{Sort: []string{"a", "-b"}}, small, nil, ""},
		{"sort keys", api.SearchRequest{Sort: []string{"a", "-b", "c"}}, small, nil, "the number of sort keys is 3, over the index's limit of 2 (query.limits.max_sort)"},
		{"40,000 sort keys, default limits", api.SearchRequest{Sort: slices.Repeat([]string{"-a"}, 40000)}, def, nil, "max_sort"},
		{"fields at the limit", api.SearchRequest{Fields: []string{"a", "b", "*"}}, small, nil, ""},
		{"fields", api.SearchRequest{Fields: []string{"a", "b", "c", "d"}}, small, nil, "the number of fields is 4, over the index's limit of 3 (query.limits.max_fields)"},
		{"hint query terms", api.SearchRequest{Q: "x"}, small, &Hints{Query: json.RawMessage(`{"match":"a b c d e f g h i j k l m","field":"a"}`)}, "max_terms"},
		{"explain at the limit", api.SearchRequest{Q: "x", From: 90, Size: 10, Explain: true}, def, nil, ""},
		{"explain over the limit", api.SearchRequest{Q: "x", From: 91, Size: 10, Explain: true}, def, nil, "from+size 101 hits, over the limit of 100 (the broker's --max-explain)"},
		{"explain of 10,000 hits", api.SearchRequest{Q: "x", Size: 10000, Explain: true}, def, nil, "from+size 10000 hits, over the limit of 100 (the broker's --max-explain)"},
		{"10,000 hits unexplained", api.SearchRequest{Q: "x", Size: 10000}, def, nil, ""},
	}
	for _, c := range cases {
		plan, err := p.Plan(&c.req, c.def, c.hint)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if plan.MaxTerms != c.def.Query.Limits.Effective().MaxTerms {
				t.Errorf("%s: plan's max terms %d", c.name, plan.MaxTerms)
			}
			continue
		}
		if !errors.Is(err, api.ErrQueryTooComplex) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want query_too_complex saying %q", c.name, err, c.want)
		}
	}
	// A rewriter's rerank depth is held to the window, not refused: the
	// user did not ask for it.
	if plan, err := p.Plan(&api.SearchRequest{Q: "x"}, small, &Hints{RerankDepth: 51}); err != nil || plan.K != 50 || plan.MaxWindow != 50 {
		t.Errorf("rerank depth over the window: %+v %v", plan, err)
	}
	// The operator's explain limit, lowered.
	low, err := New(Config{MaxExplain: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := low.Plan(&api.SearchRequest{Q: "x", Size: 6, Explain: true}, def, nil); !errors.Is(err, api.ErrQueryTooComplex) || !strings.Contains(err.Error(), "over the limit of 5") {
		t.Errorf("explain over a lowered limit: %v", err)
	}
	bad := api.QuerySettings{Limits: api.QueryLimits{MaxTerms: 1 << 20}}
	if err := bad.Validate(); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "query.limits.max_terms must be between 0 (the default) and 65536") {
		t.Errorf("a limit over its ceiling: %v", err)
	}
}

func TestDeadlineSplit(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 1}
	for _, c := range []struct {
		timeoutMS   int
		total, shrd time.Duration
	}{
		{0, 2 * time.Second, 2*time.Second - 20*time.Millisecond},
		{100, 100 * time.Millisecond, 90 * time.Millisecond},
		{1000000, 60 * time.Second, 60*time.Second - 20*time.Millisecond},
	} {
		plan, err := p.Plan(&api.SearchRequest{TimeoutMS: c.timeoutMS}, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Timeout != c.total || plan.ShardTimeout != c.shrd {
			t.Errorf("timeout_ms %d: %s/%s, want %s/%s", c.timeoutMS, plan.Timeout, plan.ShardTimeout, c.total, c.shrd)
		}
	}
}

func FuzzPlan(f *testing.F) {
	f.Add([]byte(`{"q":"spicy noodles","size":5}`), []byte(`{"fields":[{"field":"name","boost":2}],"phrase_boost":1}`))
	f.Add([]byte(`{"query":{"match_phrase":"a b"},"filter":{"term":"x"}}`), []byte(`{}`))
	p, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, reqJSON, settingsJSON []byte) {
		var req api.SearchRequest
		var qs api.QuerySettings
		if json.Unmarshal(reqJSON, &req) != nil || json.Unmarshal(settingsJSON, &qs) != nil {
			return
		}
		plan, err := p.Plan(&req, api.IndexDefinition{Name: "f", Shards: 3, Query: qs}, nil)
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if plan.K < plan.From+plan.Size || plan.ShardTimeout <= 0 || plan.ShardTimeout > plan.Timeout || !json.Valid(plan.Query) {
			t.Fatalf("bad plan: %+v", plan)
		}
	})
}

// A q of many long words with typos and search as you type on, over
// several fields, is held to the index's clause and term limits like any
// query: each word's typo clause counts, so the most q allows is refused,
// not expanded on every shard.
func TestTyposAndPrefixBounded(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name"}, {Field: "description"}}, Typos: api.TyposAll, Prefix: "last"}
	def := api.IndexDefinition{Name: "t", Shards: 2, Query: qs}
	var distinct strings.Builder
	for i := 0; distinct.Len() < 4000; i++ { // under max_q_bytes
		fmt.Fprintf(&distinct, "word%c%c ", 'a'+i%26, 'a'+i/26%26)
	}
	if _, err := p.Plan(&api.SearchRequest{Q: distinct.String()}, def, nil); api.CodeOf(err) != api.CodeQueryTooComplex {
		t.Fatalf("%d distinct typo-tolerant words over 2 fields: %v, want query_too_complex", distinct.Len()/7, err)
	}
	// The same word 500 times is one word's clauses.
	plan, err := p.Plan(&api.SearchRequest{Q: strings.Repeat("noodles ", 500) + "spic"}, def, nil)
	if err != nil {
		t.Fatalf("a word repeated: %v", err)
	}
	if n := strings.Count(string(plan.Query), `"fuzziness":1`); n != 2 {
		t.Errorf("a word repeated 500 times: %d typo clauses, want 2 (one a field)", n)
	}
	if _, err := p.Plan(&api.SearchRequest{Q: "spicy noodles", Typos: new(true), Prefix: new(true)}, def, nil); err != nil {
		t.Fatalf("a short q: %v", err)
	}
	// A word over api.TypoMaxLetters has no typos: its automaton on a
	// shard is built per word (4,001 letters failed the search).
	long := strings.Repeat("n", api.TypoMaxLetters+1)
	if plan, err = p.Plan(&api.SearchRequest{Q: long + " noodles"}, def, nil); err != nil {
		t.Fatalf("a long word: %v", err)
	}
	if one, two := strings.Count(string(plan.Query), `"fuzziness":1`), strings.Count(string(plan.Query), `"fuzziness":2`); one != 2 || two != 0 {
		t.Errorf("a word of %d letters and noodles: %d typo clauses of one edit and %d of two, want noodles' 2 (one a field) and none", len(long), one, two)
	}
}

// Each shard's first-round depth: ShardDepth times its share of K, plus
// the slack, never over K; K itself on one shard, with ShardDepth
// negative, and for no hits.
func TestShardK(t *testing.T) {
	for _, c := range []struct {
		depth        float64
		shards, size int
		rerank       int
		want         int
	}{
		{0, 4, 50, 0, 24},    // the default 1.5: ceil(18.75) + 5
		{0, 4, 10, 0, 9},     // ceil(3.75) + 5
		{0, 4, 5, 0, 5},      // the slack alone reaches K
		{0, 2, 10, 50, 43},   // the ranker's depth is K: ceil(37.5) + 5
		{0, 1, 50, 0, 50},    // one shard: one round
		{0, 16, 1000, 0, 99}, // ceil(93.75) + 5
		{-1, 4, 50, 0, 50},   // turned off
		{2, 4, 0, 0, 0},      // size 0: no hits
		{3, 4, 100, 0, 80},   // ceil(75) + 5
	} {
		p, err := New(Config{ShardDepth: c.depth})
		if err != nil {
			t.Fatal(err)
		}
		req := api.SearchRequest{Q: "x", Size: c.size}
		if c.size == 0 {
			req.Size = api.NoHits
		}
		var hints *Hints
		if c.rerank > 0 {
			hints = &Hints{Ranking: &Ranking{Depth: c.rerank}}
		}
		plan, err := p.Plan(&req, api.IndexDefinition{Name: "x", Shards: c.shards}, hints)
		if err != nil {
			t.Fatal(err)
		}
		if plan.ShardK != c.want || plan.ShardK > plan.K {
			t.Errorf("depth %g, %d shards, size %d, rerank %d: shard k %d of %d, want %d", c.depth, c.shards, c.size, c.rerank, plan.ShardK, plan.K, c.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := New(Config{ShardDepth: bad}); err == nil {
			t.Errorf("shard depth %v accepted", bad)
		}
	}
}

// Typo tolerance is on by default ("auto"): the words of q that may take
// typos are listed (TypoCandidates), those a field does not hold kept
// (UnknownWords, from q's statistics), and only they get typo clauses
// in the plan; "all" gives every word its typos, "off" (or a request's
// false, or fuzziness) none.
func TestTypoWords(t *testing.T) {
	m := mapping.NewIndexMapping()
	m.DefaultAnalyzer = "standard"
	p, err := New(Config{Mapping: func(*api.IndexDefinition) mapping.IndexMapping { return m }})
	if err != nil {
		t.Fatal(err)
	}
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 2}, {Field: "code", Exact: true}, {Field: "_all"}}}
	req := &api.SearchRequest{Q: "chiken curry noodles the"}
	cands := TypoCandidates(req, qs)
	want := map[string][]string{"name": {"chiken", "curry", "noodles"}} // 5 letters or more; not code (exact), not _all (not alone)
	if !reflect.DeepEqual(cands, want) {
		t.Fatalf("candidates %v, want %v", cands, want)
	}
	// The index holds curry and noodles, not chiken.
	docFreq := map[string]map[string]uint64{"name": {"curry": 7, "noodles": 3, "chiken": 0}}
	unknown := UnknownWords(cands, docFreq, m)
	if want := map[string][]string{"name": {"chiken"}}; !reflect.DeepEqual(unknown, want) {
		t.Fatalf("unknown words %v, want %v", unknown, want)
	}
	// A word one field holds is held: no field gives it typos.
	two := map[string][]string{"name": {"chiken", "curry"}, "description": {"chiken", "curry"}}
	docFreq["description"] = map[string]uint64{"chiken": 0, "curry": 0}
	if got, want := UnknownWords(two, docFreq, m), map[string][]string{"name": {"chiken"}, "description": {"chiken"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("over two fields: unknown words %v, want %v", got, want)
	}
	def := api.IndexDefinition{Name: "t", Shards: 2, Query: qs}
	plan, err := p.Plan(req, def, &Hints{TypoWords: unknown})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(plan.Query), `"fuzziness":1`); n != 1 || !strings.Contains(string(plan.Query), `"match":"chiken","field":"name","boost":1,"prefix_length":1,"fuzziness":1`) {
		t.Errorf("auto: %d typo clauses in %s, want chiken's on name alone", n, plan.Query)
	}
	for _, c := range []struct {
		name     string
		settings api.QuerySettings
		typos    *bool
		want     int
	}{
		{"all", api.QuerySettings{Fields: qs.Fields, Typos: api.TyposAll}, nil, 3},
		{"off", api.QuerySettings{Fields: qs.Fields, Typos: api.TyposOff}, nil, 0},
		{"the request's false", qs, new(false), 0},
		{"fuzziness", api.QuerySettings{Fields: qs.Fields, Fuzziness: 1}, nil, 0},
		{"the request's true on an index with typos off", api.QuerySettings{Fields: qs.Fields, Typos: api.TyposOff}, new(true), 1},
	} {
		d := def
		d.Query = c.settings
		plan, err := p.Plan(&api.SearchRequest{Q: req.Q, Typos: c.typos}, d, &Hints{TypoWords: unknown})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Count(string(plan.Query), `"fuzziness":1`); got != c.want && c.settings.Fuzziness == 0 {
			t.Errorf("%s: %d typo clauses, want %d: %s", c.name, got, c.want, plan.Query)
		}
		if TypoCandidates(&api.SearchRequest{Q: req.Q, Typos: c.typos}, c.settings) != nil && c.name != "the request's true on an index with typos off" {
			t.Errorf("%s: candidates listed, but the words' typos are not chosen by the index", c.name)
		}
	}
}
