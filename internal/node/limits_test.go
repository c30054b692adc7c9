package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/corpus"
)

// corpusIndex creates index (shards shards, default mapping) with docs
// documents of a generated corpus with a large vocabulary, and waits until
// they are searchable.
func corpusIndex(tb testing.TB, n *Node, index string, shards, docs int, qs api.QuerySettings) *corpus.Generator {
	tb.Helper()
	ctx := context.Background()
	c := n.Client()
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: index, Shards: shards, Query: qs}); err != nil {
		tb.Fatal(err)
	}
	g := corpus.New(corpus.Config{Seed: 11})
	var buf bytes.Buffer
	if err := g.WriteNDJSON(&buf, docs); err != nil {
		tb.Fatal(err)
	}
	mustBulk(tb, c, index, &buf)
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := c.Search(ctx, index, &api.SearchRequest{Size: api.NoHits})
		if err == nil && r.Total == uint64(docs) && r.Shards.Failed == 0 {
			return g
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: %d of %d documents searchable: %v", index, r.Total, docs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Each of the requests that stalled every team's searches is refused at
// once with query_too_complex naming the limit, over HTTP, and the broker
// answers a normal query straight after.
func TestQueryLimits(t *testing.T) {
	n := startNode(t)
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "title", Boost: 2}, {Field: "body"}}, Limits: api.QueryLimits{MaxTerms: 200}}
	g := corpusIndex(t, n, "lim", 2, 400, qs)
	url := "http://" + n.HTTPAddr + "/v1/indexes/lim/search"
	common := g.Words()[3]
	nest := strings.Repeat(`{"conjuncts":[`, 4900) + `{"term":"x","field":"body"}` + strings.Repeat(`]}`, 4900)
	cases := []struct {
		name, body string
		code       int
		want       string
	}{
		{"a megabyte of q", fmt.Sprintf(`{"q":%q}`, strings.Repeat(common+" ", 1000000/(len(common)+1))), 400, "query.limits.max_q_bytes"},
		{"5,000 words", fmt.Sprintf(`{"q":%q}`, strings.Repeat("ab ", 1300)), 400, "query.limits.max_terms"},
		{"conjuncts 4,900 deep", `{"query":` + nest + `}`, 400, "query.limits.max_query_bytes"},
		{"conjuncts 40 deep", `{"query":` + strings.Repeat(`{"conjuncts":[`, 40) + `{"term":"x","field":"body"}` + strings.Repeat(`]}`, 40) + `}`, 400, "query.limits.max_depth"},
		{"a wildcard over the dictionary", `{"query":{"wildcard":"*a*","field":"body"}}`, 400, "query.limits.max_terms"},
		{"a regexp over the dictionary", `{"query":{"regexp":".*e.*","field":"body"}}`, 400, "query.limits.max_terms"},
		{"a prefix over the dictionary", `{"query":{"prefix":"","field":"body"}}`, 400, ""},
		{"from+size", `{"q":"x","from":9995,"size":10}`, 400, "query.limits.max_window"},
		{"a facet too large", `{"q":"x","facets":{"t":{"field":"tag","size":100000}}}`, 400, "query.limits.max_facet_size"},
		{"match operator xor", `{"query":{"match":"x","field":"body","operator":"xor"}}`, 400, "operator must be"},
		{"a normal query", fmt.Sprintf(`{"q":%q,"size":5}`, common), 200, ""},
		{"a narrow wildcard", fmt.Sprintf(`{"query":{"wildcard":%q,"field":"body"}}`, common[:len(common)-1]+"*"), 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, body := post(t, url, c.body)
			took := time.Since(start)
			if code != c.code || !strings.Contains(body, c.want) {
				t.Fatalf("%d %.300s, want %d saying %q", code, body, c.code, c.want)
			}
			if code == 400 {
				var e struct{ Error api.Error }
				if err := json.Unmarshal([]byte(body), &e); err != nil || (e.Error.Code != api.CodeQueryTooComplex && e.Error.Code != api.CodeBadRequest) {
					t.Fatalf("error body %s: %v", body, err)
				}
				if strings.Contains(body, "0x") || strings.Contains(body, "TooManyTermSearchers") {
					t.Errorf("internal detail in the message: %s", body)
				}
			}
			if took > time.Second {
				t.Errorf("took %s", took)
			}
			// The next normal query is answered at once.
			start = time.Now()
			if code, body := post(t, url, fmt.Sprintf(`{"q":%q}`, common)); code != 200 || time.Since(start) > time.Second {
				t.Fatalf("the query after: %d in %s: %.200s", code, time.Since(start), body)
			}
		})
	}
}

// postTimed posts body to url and reports the status and latency.
func postTimed(client *http.Client, url, body string) (int, time.Duration, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, time.Since(start), err
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}
