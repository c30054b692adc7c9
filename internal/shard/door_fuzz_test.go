package shard

import (
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/indexmap"
)

// FuzzDoorThenApply: what the door accepts, a shard applies ("acknowledged
// means searchable", issue 35): a document api.ParseDocument takes under
// an index's limits (what client.Put checks before it publishes) is never
// skipped by the shard that applies it from the stream. A document bleve
// cannot index, or that the shard refuses for a reason the door does not
// check, would be acknowledged and never searchable.
func FuzzDoorThenApply(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","x":{"y":[1,{"z":2}]}}`,
		`{"id":"hn","v":1e400}`,
		`{"id":"n","v":-0,"w":1e-400,"x":123456789012345678901234567890}`,
		`{"id":"u","t":"\ud800"}`,
		`{"id":"e","":1,"a.b":2,"a":{"b":3}}`,
		`{"id":"r","_id":"victim"}`,
		`{"id":"s","_all":"x","_score":1}`,
		`{"id":"z","t":null,"u":[],"v":{},"w":[null,[],{}]}`,
		`{"id":"d","t":"2026-12-05T03:00:00Z","g":{"lat":1,"lon":2}}`,
	} {
		f.Add([]byte(s))
	}
	m, err := indexmap.Build(nil)
	if err != nil {
		f.Fatal(err)
	}
	lim := api.DocumentLimits{MaxFields: 64, MaxDepth: 8, MaxIndexFields: 1 << 20}
	r, err := OpenLocal(Config{Index: "t", Shard: 0, Mapping: m, Dir: f.TempDir() + "/r", Documents: lim})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { r.Close() })
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := api.ParseDocument(doc, 1<<16, lim)
		if err != nil {
			return // refused at the door: never acknowledged
		}
		if err := r.addDoc(r.idx.NewBatch(), d.ID, doc); err != nil {
			t.Fatalf("the door took %q, the shard refuses it: %v", doc, err)
		}
	})
}
