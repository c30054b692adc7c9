package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// shopMapping is a mapping of title (English) and whatever fields adds
// (each "name": field mapping JSON).
func shopMapping(fields ...string) json.RawMessage {
	props := []string{`"title":{"fields":[{"type":"text","analyzer":"en","index":true,"store":true,"include_in_all":true}]}`}
	for i := 0; i+1 < len(fields); i += 2 {
		props = append(props, fmt.Sprintf(`%q:{"fields":[%s]}`, fields[i], fields[i+1]))
	}
	return json.RawMessage(`{"default_mapping":{"properties":{` + strings.Join(props, ",") + `}}}`)
}

// keywordField is a field mapping that keeps a value whole, for term
// queries and facets.
const keywordField = `{"type":"text","analyzer":"keyword","index":true,"store":true,"docvalues":true}`

// TestChangeMapping: a mapping changes in place by adding a field, over
// NATS (the client) and over HTTP, while searches run (none fails) and
// documents are written: documents written after the change are indexed
// with the new field's analyzer (a keyword keeps "Hot Sauce" whole, for
// a term query and a facet), those before keep theirs. Refused, changing
// nothing: a change to an existing field (400, naming it and pointing to
// reindex), a field documents already hold (409, naming it), no mapping.
// The same mapping again is harmless.
func TestChangeMapping(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "shop", 2, shopMapping()); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&docs, `{"id":"old%d","title":"hot sauce number %d"}`+"\n", i, i)
	}
	docs.WriteString(`{"id":"painted","title":"a painted sauce bottle","color":"red"}` + "\n")
	mustBulk(t, c, "shop", &docs)

	// Searches throughout: none may fail.
	var searches, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := c.Search(ctx, "shop", &api.SearchRequest{Q: "sauce"})
			searches.Add(1)
			if err != nil {
				failed.Add(1)
				t.Errorf("a search during the change: %v", err)
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
		if searches.Load() < 10 || failed.Load() > 0 {
			t.Errorf("%d searches during the changes, %d failed", searches.Load(), failed.Load())
		}
	}()

	withTag := shopMapping("tag", keywordField)
	def, err := c.ChangeMapping(ctx, "shop", withTag)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(def.Mapping), `"tag":{`) {
		t.Fatalf("stored mapping %s", def.Mapping)
	}
	if again, err := c.ChangeMapping(ctx, "shop", withTag); err != nil || !bytes.Equal(again.Mapping, def.Mapping) {
		t.Fatalf("the same mapping again: %v %s", err, again.Mapping)
	}
	docs.Reset()
	for i := range 10 {
		fmt.Fprintf(&docs, `{"id":"new%d","title":"new sauce %d","tag":%q}`+"\n", i, i, []string{"Hot Sauce", "Mild"}[i%2])
	}
	bulk(t, c, "shop", &docs, client.BulkOptions{NoSnapshot: true})
	waitIndexed(t, c, "shop", 51)
	r, err := c.Search(ctx, "shop", &api.SearchRequest{Query: json.RawMessage(`{"term":"Hot Sauce","field":"tag"}`), Size: 20,
		Facets: map[string]api.FacetRequest{"tags": {Field: "tag"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 5 || len(r.Facets["tags"].Terms) != 1 || r.Facets["tags"].Terms[0] != (api.TermCount{Term: "Hot Sauce", Count: 5}) {
		t.Fatalf("term Hot Sauce on the new keyword field: %d hits, facet %+v", r.Total, r.Facets["tags"])
	}
	if r, err := c.Search(ctx, "shop", &api.SearchRequest{Query: json.RawMessage(`{"match":"sauces","field":"title"}`), Size: api.NoHits}); err != nil || r.Total != 51 {
		t.Fatalf("title (English) over old and new documents: %v, %+v", err, r)
	}

	// Refused, changing nothing.
	before, _ := c.Index(ctx, "shop")
	_, err = c.ChangeMapping(ctx, "shop", json.RawMessage(strings.Replace(string(withTag), `"analyzer":"en"`, `"analyzer":"standard"`, 1)))
	mustRefuse(t, "a changed analyzer", err, api.CodeBadRequest, "default_mapping.properties.title.fields changed", "quarry index reindex")
	_, err = c.ChangeMapping(ctx, "shop", shopMapping("tag", keywordField, "color", keywordField))
	mustRefuse(t, "a field documents hold", err, api.CodeConflict, `documents of the index already hold field "color"`, "reindex")
	_, err = c.ChangeMapping(ctx, "shop", nil)
	mustRefuse(t, "no mapping", err, api.CodeBadRequest, "give the whole new mapping")
	_, err = c.ChangeMapping(ctx, "nowhere", withTag)
	mustRefuse(t, "no such index", err, api.CodeNotFound, `index "nowhere" does not exist`)
	if after, _ := c.Index(ctx, "shop"); !bytes.Equal(after.Mapping, before.Mapping) {
		t.Fatalf("a refused change changed the mapping: %s", after.Mapping)
	}

	// Over HTTP: the body is the whole mapping.
	url := "http://" + n.HTTPAddr + "/v1/indexes/shop/mapping"
	if status, _, body := httpRequest(t, "PUT", url, string(shopMapping("tag", keywordField, "sku", keywordField)), "Content-Type", "application/json"); status != 200 || !strings.Contains(body, `\"sku\"`) && !strings.Contains(body, `"sku"`) {
		t.Fatalf("PUT mapping: %d %s", status, body)
	}
	if status, _, body := httpRequest(t, "PUT", url, string(shopMapping("tag", keywordField, "sku", keywordField, "color", keywordField)), "Content-Type", "application/json"); status != 409 || !strings.Contains(body, `"conflict"`) {
		t.Fatalf("PUT a held field: %d %s", status, body)
	}
	if status, _, body := httpRequest(t, "PUT", url, `{"default_mapping":`, "Content-Type", "application/json"); status != 400 {
		t.Fatalf("PUT a broken mapping: %d %s", status, body)
	}
	docs.Reset()
	docs.WriteString(`{"id":"sku1","title":"sauce with a code","sku":"AB-12 x"}` + "\n")
	bulk(t, c, "shop", &docs, client.BulkOptions{NoSnapshot: true})
	waitIndexed(t, c, "shop", 52)
	if r, err := c.Search(ctx, "shop", &api.SearchRequest{Query: json.RawMessage(`{"term":"AB-12 x","field":"sku"}`)}); err != nil || r.Total != 1 {
		t.Fatalf("term on the field added over HTTP: %v %+v", err, r)
	}

	// A reindex copies the documents, not the mapping changes (markers
	// in the stream): the new index has its own mapping.
	if _, err := c.CreateAlias(ctx, "shopfront", "shop"); err != nil {
		t.Fatal(err)
	}
	res, err := c.Reindex(ctx, "shop", "shop-v2", client.ReindexOptions{Alias: "shopfront", Grace: 100 * time.Millisecond,
		Mapping: shopMapping("tag", keywordField, "sku", keywordField, "color", keywordField)})
	if err != nil || res.RefusedCount != 0 {
		t.Fatalf("reindex: %v, %+v", err, res)
	}
	waitIndexed(t, c, "shop-v2", 52)
	if r, err := c.Search(ctx, "shop-v2", &api.SearchRequest{Query: json.RawMessage(`{"term":"red","field":"color"}`)}); err != nil || r.Total != 1 {
		t.Fatalf("the held field, mapped in the new index: %v %+v", err, r)
	}
}

// BenchmarkChangeMapping: adding a field in place to the 4-shard demo
// catalogue (20,000 items), from the request until a document written
// after it, with the new field, is searchable by it (ms/op), while one
// caller searches without pause: its latencies during the changes
// (during-p50/p99/max) beside the same caller's just before them
// (calm-p50/p99/max), in one run.
func BenchmarkChangeMapping(b *testing.B) {
	n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	if res := loadCatalog(b, n, "menu", e2eShards, catalogNDJSON(b, catalog.DefaultSize)); res.Snapshot != nil {
		e2eWaitGeneration(b, n, res.Snapshot.Generation)
	}
	c := n.Client()
	ctx := context.Background()
	def, err := c.Index(ctx, "menu")
	if err != nil {
		b.Fatal(err)
	}
	measure := func(stop <-chan struct{}) <-chan []time.Duration {
		out := make(chan []time.Duration, 1)
		go func() {
			var lat []time.Duration
			for i := 0; ; i++ {
				select {
				case <-stop:
					out <- lat
					return
				default:
				}
				start := time.Now()
				if _, err := c.Search(ctx, "menu", &api.SearchRequest{Q: benchQueries[i%len(benchQueries)]}); err != nil {
					b.Error(err)
				}
				lat = append(lat, time.Since(start))
			}
		}()
		return out
	}
	stats := func(lat []time.Duration) (p50, p99, top float64) {
		slices.Sort(lat)
		at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
		return at(0.5), at(0.99), at(1)
	}
	// The same caller, calm, for a second first.
	stop := make(chan struct{})
	calm := measure(stop)
	time.Sleep(time.Second)
	close(stop)
	cp50, cp99, cmax := stats(<-calm)

	mapping := def.Mapping
	stop = make(chan struct{})
	during := measure(stop)
	i := 0
	for b.Loop() {
		field := fmt.Sprintf("extra%d", i)
		var m map[string]any
		if err := json.Unmarshal(mapping, &m); err != nil {
			b.Fatal(err)
		}
		m["default_mapping"].(map[string]any)["properties"].(map[string]any)[field] = json.RawMessage(`{"fields":[` + keywordField + `]}`)
		next, _ := json.Marshal(m)
		d, err := c.ChangeMapping(ctx, "menu", next)
		if err != nil {
			b.Fatal(err)
		}
		mapping = d.Mapping
		seq, err := c.Put(ctx, "menu", fmt.Appendf(nil, `{"id":"extra-%d",%q:"Whole Value"}`, i, field))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.WaitSearchable(ctx, "menu", seq); err != nil {
			b.Fatal(err)
		}
		if r, err := c.Search(ctx, "menu", &api.SearchRequest{Query: json.RawMessage(fmt.Sprintf(`{"term":"Whole Value","field":%q}`, field))}); err != nil || r.Total != 1 {
			b.Fatalf("the new field %s: %v %+v", field, err, r)
		}
		i++
	}
	b.StopTimer()
	close(stop)
	p50, p99, top := stats(<-during)
	b.ReportMetric(cp50, "calm-p50-µs")
	b.ReportMetric(cp99, "calm-p99-µs")
	b.ReportMetric(cmax, "calm-max-µs")
	b.ReportMetric(p50, "during-p50-µs")
	b.ReportMetric(p99, "during-p99-µs")
	b.ReportMetric(top, "during-max-µs")
}
