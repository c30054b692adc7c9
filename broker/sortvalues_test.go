package broker

import (
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/geo"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// sortTestMapping declares one field of every kind; anything else is
// dynamic.
const sortTestMapping = `{"default_mapping":{"dynamic":true,"properties":{
	"price":{"fields":[{"name":"price","type":"number"}]},
	"created":{"fields":[{"name":"created","type":"datetime"}]},
	"name":{"fields":[{"name":"name","type":"text","analyzer":"keyword"}]},
	"open":{"fields":[{"name":"open","type":"boolean"}]},
	"where":{"fields":[{"name":"where","type":"geopoint"}]},
	"addr":{"fields":[{"name":"addr","type":"IP"}]}}}}`

func numKey(f float64) string {
	return string(numeric.MustNewPrefixCodedInt64(numeric.Float64ToInt64(f), 0))
}

func dateKey(t time.Time) string {
	return string(numeric.MustNewPrefixCodedInt64(t.UnixNano(), 0))
}

func TestDecodeSortValues(t *testing.T) {
	types := (&sortTypeCache{}).of(api.IndexDefinition{Name: "x", Mapping: []byte(sortTestMapping)})
	when := time.Date(2026, 11, 30, 18, 4, 5, 123000000, time.UTC)
	old := time.Date(1899, 12, 31, 0, 0, 0, 0, time.UTC)
	geoKey := string(numeric.MustNewPrefixCodedInt64(int64(geo.MortonHash(-0.1278, 51.5074)), 0))
	cases := []struct {
		name string
		sort string
		key  string
		want any
	}{
		{"number", "-price", numKey(12.5), 12.5},
		{"negative number", "price", numKey(-3), -3.0},
		{"zero", "price", numKey(0), 0.0},
		{"date", "created", dateKey(when), "2026-11-30T18:04:05.123Z"},
		{"date before 1970", "+created", dateKey(old), "1899-12-31T00:00:00Z"},
		{"text", "name", "Pad Thai", "Pad Thai"},
		{"text that looks prefix-coded", "name", numKey(7), numKey(7)},
		{"boolean true", "open", "T", true},
		{"boolean false", "-open", "F", false},
		{"geopoint", "where", geoKey, map[string]any{"lat": geo.MortonUnhashLat(geo.MortonHash(-0.1278, 51.5074)), "lon": geo.MortonUnhashLon(geo.MortonHash(-0.1278, 51.5074))}},
		{"IP", "addr", string(net.ParseIP("10.1.2.3").To16()), "10.1.2.3"},
		{"missing, sorted last", "price", search.HighTerm, nil},
		{"missing, sorted first", "-price", search.LowTerm, nil},
		{"dynamic number", "rating", numKey(4.5), 4.5},
		{"dynamic integer", "-count", numKey(1e6), 1e6},
		{"dynamic date", "updated", dateKey(when), "2026-11-30T18:04:05.123Z"},
		{"dynamic text", "cuisine", "thai", "thai"},
		{"score", "-_score", "_score", "_score"},
		{"id", "_id", "d7", "d7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits := []api.Hit{{ID: "d7", SortKeys: []string{tc.key}}}
			decodeSortValues(types, []string{tc.sort}, hits)
			if len(hits[0].Sort) != 1 || !reflect.DeepEqual(hits[0].Sort[0], tc.want) {
				t.Errorf("sort %q of %q: got %#v, want %#v", tc.sort, tc.key, hits[0].Sort, tc.want)
			}
		})
	}
	// Several keys, several hits; a deleted index (no types) still decodes.
	hits := []api.Hit{
		{ID: "a", SortKeys: []string{numKey(2), "x", "_score"}},
		{ID: "b", SortKeys: []string{numKey(1), "y", "_score"}},
	}
	decodeSortValues(nil, []string{"-price", "name", "_score"}, hits)
	if got := fmt.Sprint(hits[0].Sort, hits[1].Sort); got != "[2 x _score] [1 y _score]" {
		t.Errorf("two hits, three keys: %s", got)
	}
}

// The broker's sort path per query: decode four shards' responses of ten
// hits sorted by a number, merge them, decode the page's sort values.
func BenchmarkSortedMerge(b *testing.B) {
	var encoded [][]byte
	for s := range 4 {
		r := &wire.ShardResponse{Total: 100}
		for i := range 10 {
			r.Hits = append(r.Hits, api.Hit{ID: fmt.Sprintf("d%d-%d", s, i), Score: 1, SortKeys: []string{numKey(float64(s*10+i) + 0.5)}})
		}
		e, err := wire.AppendShardResponse(nil, r)
		if err != nil {
			b.Fatal(err)
		}
		encoded = append(encoded, e)
	}
	types := (&sortTypeCache{}).of(api.IndexDefinition{Name: "x", Mapping: []byte(sortTestMapping)})
	plan := &planner.Plan{Size: 10, K: 10, Sort: []string{"-price"}}
	b.ReportAllocs()
	for b.Loop() {
		shards := make([]*wire.ShardResponse, len(encoded))
		for i, e := range encoded {
			shards[i] = &wire.ShardResponse{}
			if err := wire.UnmarshalShardResponse(e, shards[i]); err != nil {
				b.Fatal(err)
			}
		}
		page := fanout.Page(fanout.Merge(shards, plan).Hits, plan)
		decodeSortValues(types, plan.Sort, page)
		if page[0].Sort[0] != 39.5 {
			b.Fatalf("first hit %v", page[0])
		}
	}
}
