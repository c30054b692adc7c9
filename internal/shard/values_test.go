package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wire"
)

// TestDocValuesMatchStored: a ranker's candidates read their fields from
// doc values (ShardRequest.DocValues); each field must come back exactly
// as the stored document gives it, for every kind of field, arrays
// (read from the stored document), fields without doc values, a field the
// document lacks, and a document deleted since.
func TestDocValuesMatchStored(t *testing.T) {
	t.Parallel()
	items := catalog.Generate(7, 600)
	var docs []map[string]any
	raw, _ := json.Marshal(items)
	if err := json.Unmarshal(raw, &docs); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		// Odd values: negative, huge, tiny, NaN-free extremes, booleans,
		// arrays of numbers with a repeat-free order that is not sorted.
		d["flag"] = i%3 == 0
		d["weight"] = []float64{-0.0, -1e300, 5e-324, math.MaxFloat64, -273.15, 1e15 + 0.5}[i%6]
		if i%5 == 0 {
			d["scores"] = []any{9.5, -2.0, 3.25}
		} else {
			d["scores"] = float64(i)
		}
		if i%7 == 0 {
			delete(d, "rating")
		}
		if i%11 == 0 {
			d["location"] = map[string]any{"lat": -89.999, "lon": 179.999}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(catalog.Mapping(), &m); err != nil {
		t.Fatal(err)
	}
	props := m["default_mapping"].(map[string]any)["properties"].(map[string]any)
	field := func(name, typ string) map[string]any {
		return map[string]any{"enabled": true, "dynamic": false, "fields": []any{map[string]any{
			"name": name, "type": typ, "store": true, "index": true, "docvalues": true}}}
	}
	props["flag"], props["weight"], props["scores"] = field("flag", "boolean"), field("weight", "number"), field("scores", "number")
	mapping, _ := json.Marshal(m)

	reps := loadReplicas(t, 2, mapping, docs)
	deleted := docs[3]["id"].(string)
	fields := []string{"rating", "open_hour", "close_hour", "location", "tags", "cuisine", "flag", "weight", "scores", "name", "price", "missing"}
	for i, r := range reps {
		kinds := map[string]valueKind{}
		for _, f := range fields {
			kinds[f] = r.kinds.of(f)
		}
		want := map[string]valueKind{"rating": numberValue, "location": geoPointValue, "tags": keywordValue, "flag": boolValue, "name": storedOnly, "missing": storedOnly}
		for f, k := range want {
			if kinds[f] != k {
				t.Fatalf("shard %d: field %s is of kind %d, want %d", i, f, kinds[f], k)
			}
		}
	}
	ctx := context.Background()
	q := json.RawMessage(`{"match_all":{}}`)
	for i, r := range reps {
		plain, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1000, Fields: fields})
		if err != nil {
			t.Fatal(err)
		}
		dv, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1000, Fields: fields, DocValues: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(plain.Hits) != len(dv.Hits) || len(plain.Hits) < 250 {
			t.Fatalf("shard %d: %d hits plain, %d with doc values", i, len(plain.Hits), len(dv.Hits))
		}
		for j := range plain.Hits {
			p, d := plain.Hits[j], dv.Hits[j]
			if p.ID != d.ID || !reflect.DeepEqual(p.Fields, d.Fields) {
				t.Fatalf("shard %d hit %d:\nstored     %s %v\ndoc values %s %v", i, j, p.ID, p.Fields, d.ID, d.Fields)
			}
		}
		// The fetch phase: the same fields by id, in the asked order; an
		// id the shard does not hold has none.
		ids := []string{dv.Hits[5].ID, dv.Hits[0].ID, "no-such-document", dv.Hits[2].ID}
		fr, err := wire.NewFetch(ids, fields)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Search(ctx, fr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != len(ids) {
			t.Fatalf("shard %d: fetch of %d ids gave %d hits", i, len(ids), len(got.Hits))
		}
		for j, h := range got.Hits {
			if h.ID != ids[j] {
				t.Fatalf("shard %d: fetch hit %d is %s, want %s", i, j, h.ID, ids[j])
			}
		}
		for j, k := range []int{5, 0, -1, 2} {
			var want map[string]any
			if k >= 0 {
				want = plain.Hits[k].Fields
			}
			if !reflect.DeepEqual(got.Hits[j].Fields, want) {
				t.Fatalf("shard %d: fetch of %s gave %v, want %v", i, ids[j], got.Hits[j].Fields, want)
			}
		}
	}
	// A document deleted after the search: its fields are gone.
	r := reps[shardOf(deleted, len(reps))]
	deleteDocs(t, reps, []string{deleted})
	fr, _ := wire.NewFetch([]string{deleted}, fields)
	got, err := r.Search(ctx, fr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Hits) != 1 || got.Hits[0].Fields != nil {
		t.Fatalf("fetch of a deleted document: %+v", got.Hits)
	}
	if _, err := r.Search(ctx, &wire.ShardRequest{Phase: wire.PhaseFetch, IDs: make([]string, 20000)}); err == nil {
		t.Fatal("a fetch of 20,000 ids was taken")
	} else {
		fmt.Println(err)
	}
}
