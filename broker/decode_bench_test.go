package broker

import "testing"

// benchRequests are typical search requests: a plain text query, and one
// with a bleve query, a filter, sort, fields, facets and context.
var benchRequests = map[string][]byte{
	"small": []byte(`{"q":"spicy noodles","size":10}`),
	"full": []byte(`{"query":{"conjuncts":[{"match":"spicy noodles","field":"name"},{"term":"thai","field":"cuisine"}]},` +
		`"filter":{"min":5,"max":20,"field":"price"},"size":20,"from":10,"sort":["-price","_score"],"fields":["name","price","cuisine"],` +
		`"facets":{"cuisine":{"field":"cuisine","size":5},"diet":{"field":"diet"}},"context":{"user":"u42","locale":"en-GB"},"timeout_ms":500,"allow_partial":false}`),
}

// BenchmarkDecodeRequest measures the NATS search door's decoding: the
// strict checks and the decode into api.SearchRequest.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, name := range []string{"small", "full"} {
		data := benchRequests[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := DecodeRequest(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
