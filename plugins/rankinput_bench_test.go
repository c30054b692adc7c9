package plugins

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// BenchmarkRankInput: a ranker's request for 100 candidates reading two
// fields of five (one a 500-byte text), from fields decoded into maps and
// from the shards' JSON (api.Hit.ValuesOf).
func BenchmarkRankInput(b *testing.B) {
	hits := make([]api.Hit, 100)
	raws := make([]api.Hit, 100)
	for i := range hits {
		hits[i] = api.Hit{ID: fmt.Sprint(i), Score: 1, Fields: map[string]any{"title": "Hand-pulled noodles", "body": strings.Repeat("chilli oil, sesame sauce and minced pork; ", 12), "price": 12.5, "year": 1999.0, "tags": []any{"a", "b"}}}
		raw, _ := json.Marshal(hits[i].Fields)
		raws[i] = api.Hit{ID: hits[i].ID, Score: 1, FieldsJSON: raw}
	}
	b.Run("fields=maps", func(b *testing.B) {
		for b.Loop() {
			RankInput("q", nil, hits, []string{"price", "year"})
		}
	})
	b.Run("fields=json", func(b *testing.B) {
		for b.Loop() {
			RankInput("q", nil, raws, []string{"price", "year"})
		}
	})
}
