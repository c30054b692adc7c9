package api

import "testing"

// benchDocument is a catalogue item as documents come in: a dozen fields,
// a long text, an array of objects.
var benchDocument = []byte(`{"id":"sku-000123","name":"Spicy Dan Dan Noodles","description":"Hand-pulled wheat noodles in a chilli oil and sesame sauce with minced pork, preserved mustard greens and Sichuan pepper; a Chengdu street classic.",` +
	`"price":12.5,"currency":"GBP","in_stock":true,"rating":4.6,"tags":["spicy","noodles","pork","sichuan"],"cuisine":"chinese",` +
	`"location":{"lat":51.5136,"lon":-0.1365},"added":"2024-05-01T10:00:00Z","variants":[{"size":"small","price":9.5},{"size":"large","price":14.0}]}`)

// BenchmarkParseDocument measures the strict checks of a document that
// comes in (client.Put, client.Bulk): UTF-8, duplicate keys, the id, the
// field paths and the depth under the index's limits.
func BenchmarkParseDocument(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDocument)))
	for b.Loop() {
		if _, err := ParseDocument(benchDocument, 1<<20, DocumentLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}
