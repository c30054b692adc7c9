package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkDoors: the same searches (4 shards of 5,000 catalogue items,
// top 10 with name and price, statistics cached) through each door of one
// process: the broker called directly (no door), the NATS request API
// (the client: JSON over the process's embedded NATS), and the HTTP API,
// which hands the body to the client (JSON over HTTP, then over NATS). The
// differences are what a door costs; docs/RATIONALE.md ("Layers") says
// why the HTTP door goes through NATS.
//
//	go test -run XXX -bench Doors -benchmem ./node/
func BenchmarkDoors(b *testing.B) {
	n := startConfig(b, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	loadCatalog(b, n, "menu", 4, catalogNDJSON(b, 5000))
	c := n.Client()
	url := "http://" + n.HTTPAddr + "/v1/indexes/menu/search"
	hc := &http.Client{}
	doors := []struct {
		name   string
		search func(q string) (int, error)
	}{
		{"broker", func(q string) (int, error) {
			r, err := n.Broker.Search(context.Background(), "menu", &api.SearchRequest{Q: q, Fields: e2eFields})
			if err != nil {
				return 0, err
			}
			return len(r.Hits), nil
		}},
		{"nats", func(q string) (int, error) {
			r, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: q, Fields: e2eFields})
			if err != nil {
				return 0, err
			}
			return len(r.Hits), nil
		}},
		{"http", func(q string) (int, error) {
			body, _ := json.Marshal(api.SearchRequest{Q: q, Fields: e2eFields})
			resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				return 0, err
			}
			var r api.SearchResponse
			if err := json.Unmarshal(raw, &r); err != nil {
				return 0, err
			}
			return len(r.Hits), nil
		}},
	}
	for _, d := range doors {
		for _, q := range benchQueries { // warm: statistics cached, pools filled
			if hits, err := d.search(q); err != nil || hits == 0 {
				b.Fatalf("%s: %q: %d hits, %v", d.name, q, hits, err)
			}
		}
	}
	for _, d := range doors {
		b.Run(d.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := d.search(benchQueries[i%len(benchQueries)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
