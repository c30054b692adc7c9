package shard

import (
	"encoding/binary"
	"fmt"
	"testing"

	zap "github.com/blevesearch/zapx/v17"

	"github.com/quarrysearch/quarry/internal/catalog"
)

// BenchmarkApplyBatch: what one batch of updates costs a replica of 5,000
// catalogue items (the demo's mapping, the default write options), by
// batch size (a batch is a new segment, so a batch of one is the fixed
// cost of a segment) and by zap's segment buffer estimate (bump: bleve's
// default 100, Quarry's segmentBufferBump). Each op is one batch; each
// case starts from a fresh replica.
//
//	go test -run XXX -bench ApplyBatch -benchmem -count 3 ./internal/shard/
func BenchmarkApplyBatch(b *testing.B) {
	docs, _ := oddCatalog(b, 5000)
	defer func(v int) { zap.NewSegmentBufferNumResultsBump = v }(zap.NewSegmentBufferNumResultsBump)
	for _, bump := range []int{100, segmentBufferBump} {
		for _, size := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("bump=%d/docs=%d", bump, size), func(b *testing.B) {
				zap.NewSegmentBufferNumResultsBump = bump
				r := loadReplicas(b, 1, catalog.Mapping(), docs)[0]
				var seq [8]byte
				i := 0
				for b.Loop() {
					batch := r.idx.NewBatch()
					for range size {
						d := docs[i%len(docs)]
						i++
						if err := batch.Index(d["id"].(string), d); err != nil {
							b.Fatal(err)
						}
					}
					binary.BigEndian.PutUint64(seq[:], uint64(i))
					batch.SetInternal(seqKey, seq[:])
					if err := r.idx.Batch(batch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
