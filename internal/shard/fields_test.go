package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/jsonenc"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wire"
)

// oddCatalog is catalogue items with fields of every kind bleve stores:
// booleans, extreme numbers, arrays of numbers in no order, dates in two
// layouts, IP addresses, a field some documents lack, odd Unicode; and a
// mapping for them.
func oddCatalog(tb testing.TB, n int) ([]map[string]any, json.RawMessage) {
	tb.Helper()
	var docs []map[string]any
	raw, _ := json.Marshal(catalog.Generate(7, n))
	if err := json.Unmarshal(raw, &docs); err != nil {
		tb.Fatal(err)
	}
	for i, d := range docs {
		d["flag"] = i%3 == 0
		d["weight"] = []float64{-0.0, -1e300, 5e-324, math.MaxFloat64, -273.15, 1e15 + 0.5}[i%6]
		if i%5 == 0 {
			d["scores"] = []any{9.5, -2.0, 3.25, 9.5}
		} else {
			d["scores"] = float64(i)
		}
		if i%7 == 0 {
			delete(d, "rating")
		}
		if i%11 == 0 {
			d["location"] = map[string]any{"lat": -89.999, "lon": 179.999}
		}
		d["note"] = []string{"e\u0301t\u00e9 \U0001F469\u200D\U0001F373", "東京", "שלום"}[i%3]
		if i%4 == 0 {
			d["added"] = fmt.Sprintf("2026-0%d-1%dT10:00:00Z", 1+i%9, i%10)
		}
		if i%9 == 0 {
			d["addr"] = fmt.Sprintf("10.0.%d.%d", i%256, i%7)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(catalog.Mapping(), &m); err != nil {
		tb.Fatal(err)
	}
	props := m["default_mapping"].(map[string]any)["properties"].(map[string]any)
	field := func(name, typ string) map[string]any {
		return map[string]any{"enabled": true, "dynamic": false, "fields": []any{map[string]any{
			"name": name, "type": typ, "store": true, "index": true, "docvalues": true}}}
	}
	for name, typ := range map[string]string{"flag": "boolean", "weight": "number", "scores": "number", "note": "text", "added": "datetime", "addr": "IP"} {
		props[name] = field(name, typ)
	}
	mapping, _ := json.Marshal(m)
	return docs, mapping
}

// TestLoadFieldsAsBleve: loadFields gives every hit exactly the fields
// bleve's own loading gives, for every kind of field, arrays, a field a
// document lacks, "*", and a document deleted since the search: from
// stored documents, and again from columns once the replicas have made
// them (columns.go), which serve every hit of the field sets they may
// hold and none of the others.
func TestLoadFieldsAsBleve(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 600)
	for _, d := range docs {
		d["body"] = strings.Repeat(d["description"].(string)+" ", 8) // too long for a column
	}
	reps := loadReplicas(t, 2, mapping, docs)
	ctx := context.Background()
	q := json.RawMessage(`{"match_all":{}}`)
	sets := []struct {
		fields  []string
		columns bool // served from columns once made
	}{
		{[]string{"rating", "open_hour", "close_hour", "location"}, true},
		{[]string{"name", "price", "tags", "flag", "weight", "scores", "note", "missing", "price"}, true},
		{[]string{"added", "rating", "addr"}, false}, // a date and an IP address: bleve's
		{[]string{"body", "rating"}, false},
		{[]string{"*"}, false},
	}
	warmed := make([]map[uint64]bool, len(reps)) // the segments columns were made for
	for _, phase := range []string{"stored", "columns"} {
		if phase == "columns" {
			for i, r := range reps {
				if err := r.Warm(ctx, nil); err != nil {
					t.Fatal(err)
				}
				warmed[i] = segmentIDs(t, r)
			}
		}
		for _, set := range sets {
			served := uint64(0)
			for _, r := range reps {
				served -= columnsOf(r.idx).served.Load()
			}
			checkFieldsAsBleve(t, reps, q, set.fields)
			for _, r := range reps {
				served += columnsOf(r.idx).served.Load()
			}
			kept := true // scorch merged none of the segments away meanwhile
			for i, r := range reps {
				kept = kept && (warmed[i] == nil || segmentsKept(t, r, warmed[i]))
			}
			if want := phase == "columns" && set.columns; kept && ((served >= 500) != want || (!want && served > 0)) {
				t.Errorf("%s, fields %v: %d hits served from columns", phase, set.fields, served)
			}
		}
	}
	for _, r := range reps {
		c := columnsOf(r.idx)
		for f, why := range map[string]string{"added": "a kind bleve formats itself", "addr": "a kind bleve formats itself", "body": "over 64 bytes"} {
			if !strings.Contains(c.skip[f], why) {
				t.Errorf("field %s not kept because %q, want %q", f, c.skip[f], why)
			}
		}
		if c.bytes.Load() <= 0 {
			t.Errorf("the columns hold %d bytes", c.bytes.Load())
		}
	}
	// A document deleted after the search: no fields, no error.
	id := docs[3]["id"].(string)
	r := reps[shardOf(id, len(reps))]
	deleteDocs(t, reps, []string{id})
	hits := []*search.DocumentMatch{{ID: id}, {ID: "no-such-document"}}
	if raws, err := loadFields(ctx, r.idx, hits, []string{"name"}, nil); err != nil || hits[0].Fields != nil || hits[1].Fields != nil || raws[0] != nil || raws[1] != nil {
		t.Fatalf("deleted document: %v %v %s", err, hits[0].Fields, raws)
	}
}

// checkFieldsAsBleve searches every replica for q's hits with fields
// and fails unless each hit's fields are bleve's.
func checkFieldsAsBleve(t *testing.T, reps []*Replica, q json.RawMessage, fields []string) {
	t.Helper()
	ctx := context.Background()
	{
		for i, r := range reps {
			res, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1000, Fields: fields})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) < 250 {
				t.Fatalf("shard %d: %d hits", i, len(res.Hits))
			}
			hits := make([]*search.DocumentMatch, len(res.Hits))
			for j, h := range res.Hits {
				hits[j] = &search.DocumentMatch{ID: h.ID}
			}
			if err := bleveFields(ctx, r.idx, hits, fields); err != nil {
				t.Fatal(err)
			}
			for j, h := range res.Hits {
				// As the broker writes them: the JSON of bleve's map.
				want, err := jsonenc.AppendObject(nil, hits[j].Fields, nil)
				if err != nil {
					t.Fatal(err)
				}
				if hits[j].Fields == nil {
					want = nil
				}
				got := []byte(h.FieldsJSON)
				if h.Fields != nil {
					got, _ = jsonenc.AppendObject(nil, h.Fields, nil)
				}
				if string(got) != string(want) {
					t.Fatalf("fields %v, shard %d, %s:\nquarry %s\nbleve  %s", fields, i, h.ID, got, want)
				}
			}
		}
	}
}

// TestMaxReplyBytes: past its MaxReplyBytes a search stops and fails
// with response_too_large naming the shard and the bound, whatever takes
// it over: the hits' ids, their explanations, their stored fields (loaded
// here or by bleve: dates, IP addresses); within it, or without one, it
// is answered.
func TestMaxReplyBytes(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 200)
	r := loadReplicas(t, 1, mapping, docs)[0]
	all := json.RawMessage(`{"match_all":{}}`)
	scored := json.RawMessage(`{"disjuncts":[{"match":"chicken","field":"name"},{"match":"rice","field":"description"},{"match":"fresh","field":"description"}]}`)
	// What the hits' ids alone come to: a bound a little over it leaves
	// no room for their fields or explanations.
	idBytes := func(q json.RawMessage) (n, hits int) {
		t.Helper()
		res, err := r.Search(context.Background(), &wire.ShardRequest{Query: q, K: 200})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			n += hitOverhead + len(h.ID)
		}
		return n, len(res.Hits)
	}
	ids, _ := idBytes(all)
	scoredIDs, scoredHits := idBytes(scored)
	if scoredHits < 10 {
		t.Fatalf("the scored query has %d hits", scoredHits)
	}
	for _, c := range []struct {
		name    string
		q       json.RawMessage
		max, k  int
		fields  []string
		explain bool
		refuse  bool
	}{
		{"no bound", all, 0, 200, []string{"*"}, true, false},
		{"within", all, 1 << 20, 200, []string{"*"}, false, false},
		{"fields over", all, ids + 1000, 200, []string{"*"}, false, true},
		{"fields over, loaded by bleve", all, ids + 100, 200, []string{"added", "addr"}, false, true},
		{"one hit within", all, 1000, 1, []string{"*"}, false, false},
		{"ids within", all, ids, 200, nil, false, false},
		{"ids over", all, ids - 1, 200, nil, false, true},
		{"explanations within", scored, 1 << 20, 200, nil, true, false},
		{"explanations over", scored, scoredIDs + 100, 200, nil, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Search(context.Background(), &wire.ShardRequest{Query: c.q, K: c.k, Fields: c.fields, Explain: c.explain, MaxReplyBytes: c.max})
			if !c.refuse {
				want := c.k
				if string(c.q) == string(scored) {
					want = min(c.k, scoredHits)
				}
				if err != nil || len(res.Hits) != want {
					t.Fatalf("%v; %d hits, want %d", err, len(res.Hits), want)
				}
				return
			}
			want := fmt.Sprintf("shard 0's reply comes to more than %d bytes", c.max)
			if !errors.Is(err, api.ErrResponseTooLarge) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--max-shard-reply-bytes") {
				t.Fatalf("got %v, want response_too_large saying %q", err, want)
			}
		})
	}
}

// BenchmarkLoadFields: the fields of a ranker's 50 candidates (georank's
// four), by bleve, by loadFields from stored documents (columns off) and
// by loadFields from columns, next to the search alone, on an index of
// 5,000 catalogue items as written (in batches of 100: many segments,
// while scorch merges them) and merged into one.
//
//	go test -run XXX -bench LoadFields -benchmem ./internal/shard/
func BenchmarkLoadFields(b *testing.B) {
	docs, mapping := oddCatalog(b, 5000)
	r := loadReplicas(b, 1, mapping, docs)[0]
	req := &wire.ShardRequest{Query: json.RawMessage(`{"match":"chicken","field":"name"}`), K: 50}
	fields := []string{"rating", "open_hour", "close_hour", "location"}
	cols := columnsOf(r.idx)
	for _, layout := range []string{"written", "merged"} {
		if layout == "merged" {
			if err := r.ForceMerge(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		cols.maxBytes.Store(-1) // none until the columns' turn
		res, err := r.idx.SearchInContext(context.Background(), bleve.NewSearchRequestOptions(query.NewMatchQuery("chicken"), 50, 0, false))
		if err != nil || len(res.Hits) != 50 {
			b.Fatalf("%v %d", err, len(res.Hits))
		}
		b.Run(layout+"/search-alone", func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Search(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		quarry := func(ctx context.Context, hits []*search.DocumentMatch) error {
			raws, err := loadFields(ctx, r.idx, hits, fields, nil)
			if err == nil && !bytes.Contains(raws[49], []byte(`"open_hour"`)) {
				err = fmt.Errorf("hit 49 has fields %s", raws[49])
			}
			return err
		}
		for _, c := range []struct {
			name string
			load func(context.Context, []*search.DocumentMatch) error
		}{
			{"bleve", func(ctx context.Context, hits []*search.DocumentMatch) error {
				err := bleveFields(ctx, r.idx, hits, fields)
				if err == nil && len(hits[49].Fields) < 3 {
					err = fmt.Errorf("hit 49 has fields %v", hits[49].Fields)
				}
				return err
			}},
			{"quarry-stored", quarry},
			{"quarry-columns", quarry},
		} {
			if c.name == "quarry-columns" {
				cols.maxBytes.Store(DefaultColumnBytes)
				cols.want(fields)
				if err := r.Warm(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(layout+"/"+c.name, func(b *testing.B) {
				served := cols.served.Load()
				hits := make([]*search.DocumentMatch, len(res.Hits))
				for b.Loop() {
					for i, h := range res.Hits {
						hits[i] = &search.DocumentMatch{ID: h.ID, IndexInternalID: h.IndexInternalID}
					}
					if err := c.load(context.Background(), hits); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cols.served.Load()-served)/float64(b.N), "served/op")
				if got := cols.served.Load() - served; (got > 0) != (c.name == "quarry-columns") {
					b.Fatalf("%d hits served from columns", got)
				}
			})
		}
	}
}

// BenchmarkLoadFieldsCold: the fields of a ranker's 24 candidates a
// shard (georank's four), chosen at random among 20,000 catalogue items,
// from columns whose memory is not in cache, as a searcher under load
// finds them: 64 MB written between loads (not timed) evicts them.
//
//	go test -run XXX -bench LoadFieldsCold -benchtime 3000x -count 3 ./internal/shard/
func BenchmarkLoadFieldsCold(b *testing.B) {
	docs, mapping := oddCatalog(b, 20000)
	r := loadReplicas(b, 1, mapping, docs)[0]
	if err := r.ForceMerge(context.Background()); err != nil {
		b.Fatal(err)
	}
	fields := []string{"rating", "open_hour", "close_hour", "location"}
	cols := columnsOf(r.idx)
	cols.want(fields)
	if err := r.Warm(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	res, err := r.idx.SearchInContext(context.Background(), bleve.NewSearchRequestOptions(query.NewMatchAllQuery(), len(docs), 0, false))
	if err != nil {
		b.Fatal(err)
	}
	evict := make([]byte, 64<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	hits := make([]*search.DocumentMatch, 24)
	served := cols.served.Load()
	for b.Loop() {
		b.StopTimer()
		for j := 0; j < len(evict); j += 64 {
			evict[j]++
		}
		for k := range hits {
			h := res.Hits[rng.IntN(len(res.Hits))]
			// The id and number fresh, as the collector leaves them.
			hits[k] = &search.DocumentMatch{ID: strings.Clone(h.ID), IndexInternalID: slices.Clone(h.IndexInternalID)}
		}
		b.StartTimer()
		if _, err := loadFields(context.Background(), r.idx, hits, fields, nil); err != nil {
			b.Fatal(err)
		}
	}
	if cols.served.Load() == served {
		b.Fatal("no hit served from columns")
	}
}

// BenchmarkSearchAndEncode: a shard's search for 1,000 hits with some of
// their fields or every one, and its reply encoded, as a searcher answers
// a heavy request: where loading fields as JSON (loadFields) saves the
// maps it made per hit.
func BenchmarkSearchAndEncode(b *testing.B) {
	docs, mapping := oddCatalog(b, 3000)
	r := loadReplicas(b, 1, mapping, docs)[0]
	for _, fields := range [][]string{{"name", "rating", "price"}, {"*"}} {
		req := &wire.ShardRequest{Query: json.RawMessage(`{"match_all":{}}`), K: 1000, Fields: fields}
		b.Run("fields="+strings.Join(fields, ","), func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				res, err := r.Search(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = wire.AppendShardResponse(buf[:0], res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
