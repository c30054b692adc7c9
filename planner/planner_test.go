package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		{"negative size", api.SearchRequest{Size: -1}, def, nil, "size"},
		{"window too deep", api.SearchRequest{From: api.MaxWindow}, def, nil, "from+size"},
		{"bad query", api.SearchRequest{Query: json.RawMessage(`{"nope":1}`)}, def, nil, "query"},
		{"bad filter", api.SearchRequest{Q: "x", Filter: json.RawMessage(`"x"`)}, def, nil, "filter"},
		{"bad operator", api.SearchRequest{Q: "x"}, api.IndexDefinition{Shards: 1, Query: api.QuerySettings{Operator: "xor"}}, nil, "operator"},
		{"bad fuzziness", api.SearchRequest{Q: "x"}, api.IndexDefinition{Shards: 1, Query: api.QuerySettings{Fuzziness: 3}}, nil, "fuzziness"},
		{"bad hint query", api.SearchRequest{Q: "x"}, def, &Hints{Query: json.RawMessage(`[]`)}, "hints.query"},
		{"deep rerank", api.SearchRequest{Q: "x"}, def, &Hints{RerankDepth: api.MaxWindow + 1}, "rerank depth"},
	}
	for _, c := range cases {
		_, err := p.Plan(&c.req, c.def, c.hint)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a bad request naming %q", c.name, err, c.want)
		}
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
