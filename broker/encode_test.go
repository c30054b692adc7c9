package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// sampleHits are n hits with a catalogue's stored fields, as maps.
func sampleHits(n int) []api.Hit {
	hits := make([]api.Hit, n)
	for i := range hits {
		hits[i] = api.Hit{ID: fmt.Sprintf("doc-%05d", i), Score: 10 / float64(i+1), Fields: map[string]any{
			"title": fmt.Sprintf("Hand-pulled noodles <no. %d> & sesame", i),
			"body":  strings.Repeat("chilli oil, sesame sauce and minced pork; ", 12),
			"price": 12.5 + float64(i%7), "year": float64(1990 + i%30), "tags": []any{"spicy", "vegan"},
		}}
	}
	return hits
}

// asShardsSend gives hits their fields as shards send them.
func asShardsSend(t testing.TB, hits []api.Hit) []api.Hit {
	out := make([]api.Hit, len(hits))
	for i, h := range hits {
		raw, err := json.Marshal(h.Fields)
		if err != nil {
			t.Fatal(err)
		}
		h.Fields, h.FieldsJSON = nil, raw
		out[i] = h
	}
	return out
}

// encodeResponse writes what json.Marshal writes, whichever form the hits'
// fields are in, into a buffer holding something already or not.
func TestEncodeResponseLikeMarshal(t *testing.T) {
	resp := &api.SearchResponse{Total: 3, TookMS: 1.25, Shards: api.ShardsInfo{Total: 2, Successful: 2},
		Facets:   map[string]api.FacetResult{"t": {Field: "tags", Total: 2, Terms: []api.TermCount{{Term: "<x>", Count: 2}}}},
		Pipeline: []api.StepReport{{Plugin: "p", Kind: api.Ranker, Status: "skipped"}}, RequestID: "r1"}
	for _, hits := range [][]api.Hit{nil, {}, sampleHits(3), asShardsSend(t, sampleHits(3)),
		{{ID: "explained", Score: 1, Explanation: json.RawMessage(`{"value":1}`), Sort: []any{"a", 2.0}}}} {
		resp.Hits = hits
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		for _, before := range []string{"", "held already"} {
			out := bytes.NewBufferString(before)
			if err := encodeResponse(out, resp); err != nil || out.String() != before+string(want) {
				t.Fatalf("%d hits: got %s, %v\nwant %s%s", len(hits), out.String(), err, before, want)
			}
		}
		if len(resp.Hits) != len(hits) {
			t.Fatal("encodeResponse lost the response's hits")
		}
	}
}

// A score JSON cannot hold fails the encoding, naming the hit.
func TestEncodeResponseRefusesInfinity(t *testing.T) {
	resp := &api.SearchResponse{Hits: []api.Hit{{ID: "inf", Score: math.Inf(1)}}}
	var out bytes.Buffer
	if err := encodeResponse(&out, resp); err == nil || !strings.Contains(err.Error(), `"inf"`) {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkEncodeResponse: a response of n hits with five stored fields,
// encoded as the broker did (encoding/json over the hits' fields as maps,
// decoded from the shards' replies) and as it does (encodeResponse over
// the fields as the shards' JSON).
func BenchmarkEncodeResponse(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		maps := &api.SearchResponse{Hits: sampleHits(n), Total: uint64(n)}
		raw := &api.SearchResponse{Hits: asShardsSend(b, maps.Hits), Total: uint64(n)}
		var out bytes.Buffer
		b.Run(fmt.Sprintf("hits=%d/maps+encoding-json", n), func(b *testing.B) {
			type plain api.Hit // Hit's fields without its MarshalJSON: encoding/json's reflection
			resp := struct {
				Hits  []plain `json:"hits"`
				Total uint64  `json:"total"`
			}{Total: maps.Total}
			for _, h := range maps.Hits {
				resp.Hits = append(resp.Hits, plain(h))
			}
			for b.Loop() {
				out.Reset()
				if err := json.NewEncoder(&out).Encode(&resp); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(out.Len()))
		})
		b.Run(fmt.Sprintf("hits=%d/fields-json", n), func(b *testing.B) {
			for b.Loop() {
				out.Reset()
				if err := encodeResponse(&out, raw); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(out.Len()))
		})
	}
}
