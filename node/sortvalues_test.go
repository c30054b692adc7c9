package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// postJSON posts body to url and decodes the JSON answer into out,
// returning the status and the raw body.
func postJSON(t *testing.T, url, body string, out any) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: body %q: %v", url, raw, err)
		}
	}
	return resp.StatusCode, string(raw)
}

// A search sorted by fields returns each hit's sort values typed, over
// HTTP: numbers as JSON numbers, dates as RFC 3339 strings, text as
// strings, a missing value as null; declared in the mapping or dynamic;
// merged in the right order across shards.
func TestHTTPSortValuesTyped(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	mapping := `{"default_mapping":{"dynamic":true,"properties":{
		"price":{"fields":[{"name":"price","type":"number","index":true,"docvalues":true}]},
		"created":{"fields":[{"name":"created","type":"datetime","index":true,"docvalues":true}]},
		"name":{"fields":[{"name":"name","type":"text","analyzer":"keyword","index":true,"store":true,"docvalues":true}]}}}}`
	if _, err := n.Client().CreateIndex(ctx, "s", 3, json.RawMessage(mapping)); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var docs strings.Builder
	for i := range 12 {
		fmt.Fprintf(&docs, `{"id":"d%02d","name":"dish %02d","price":%g,"created":%q,"rating":%g,"updated":%q}`+"\n",
			i, i, float64(i)+0.25, base.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), float64(i%5), base.Add(-time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	docs.WriteString(`{"id":"nothing","name":"no price"}` + "\n")
	if res, err := n.Client().Bulk(ctx, "s", strings.NewReader(docs.String()), client.BulkOptions{}); err != nil || res.Stored != 13 {
		t.Fatalf("bulk: %+v %v", res, err)
	}
	waitDocs(t, n, 13)
	url := "http://" + n.HTTPAddr + "/v1/indexes/s/search"
	cases := []struct {
		name, body string
		ids        []string
		sort       [][]any
	}{
		{"number, descending", `{"sort":["-price"],"size":3}`, []string{"d11", "d10", "d09"}, [][]any{{11.25}, {10.25}, {9.25}}},
		{"number ascending, missing last", `{"sort":["price"],"from":11,"size":5}`, []string{"d11", "nothing"}, [][]any{{11.25}, {nil}}},
		{"date", `{"sort":["created"],"size":2}`, []string{"d00", "d01"}, [][]any{{"2026-01-02T03:04:05Z"}, {"2026-01-02T04:04:05Z"}}},
		{"text", `{"sort":["-name"],"size":2}`, []string{"nothing", "d11"}, [][]any{{"no price"}, {"dish 11"}}},
		{"dynamic number, then id", `{"sort":["-rating","_id"],"size":3}`, []string{"d04", "d09", "d03"}, [][]any{{4.0, "d04"}, {4.0, "d09"}, {3.0, "d03"}}},
		{"dynamic date", `{"sort":["updated"],"size":1}`, []string{"d11"}, [][]any{{"2026-01-02T02:53:05Z"}}},
		{"score", `{"query":{"match_all":{}},"sort":["-_score","_id"],"size":1}`, []string{"d00"}, [][]any{{"_score", "d00"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r api.SearchResponse
			code, body := postJSON(t, url, tc.body, &r)
			if code != 200 {
				t.Fatalf("%s: %d %s", tc.body, code, body)
			}
			var ids []string
			var sorts [][]any
			for _, h := range r.Hits {
				ids = append(ids, h.ID)
				sorts = append(sorts, h.Sort)
			}
			if !reflect.DeepEqual(ids, tc.ids) || !reflect.DeepEqual(sorts, tc.sort) {
				t.Errorf("%s: ids %v sort %v, want %v %v\n%s", tc.body, ids, sorts, tc.ids, tc.sort, body)
			}
		})
	}
}
