package broker

import (
	"context"

	"github.com/quarrysearch/quarry/planner"
)

// dictionaryQueue bounds the whole-dictionary counts waiting for the
// broker's one counter (fanout's dictionaries.go says what they are): a
// field asked for while it is full is asked for again by a later query.
const dictionaryQueue = 16

// dictionaryCount is one field's whole dictionary to count, over the
// shards of a plan of its index.
type dictionaryCount struct {
	plan  *planner.Plan
	field string
}

// wantDictionaries queues the count of the whole dictionary of every
// field of terms (a query's, by field) that the statistics cache wants
// counted, for the broker's counter (countDictionaries).
func (b *Broker) wantDictionaries(plan *planner.Plan, terms map[string][]string) {
	want := b.stats.WantDictionaries(plan.Index, terms)
	for _, f := range want {
		select {
		case b.dictionaries <- dictionaryCount{plan: plan, field: f}:
		default:
			b.stats.DictionaryFailed(plan.Index, f)
		}
	}
}

// countDictionaries counts the queued dictionaries one at a time until
// ctx ends, each within its plan's shard timeout: a background cost of
// one dictionary phase (wire.PhaseDictionary) a field every half of the
// statistics' maxAge, for the fields queries read.
func (b *Broker) countDictionaries(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-b.dictionaries:
			cctx, cancel := context.WithTimeout(ctx, d.plan.ShardTimeout)
			if b.fan.CountDictionary(cctx, d.plan, d.field) {
				b.dictionariesKept.Add(1)
			} else {
				b.dictionariesNotKept.Add(1)
			}
			cancel()
		}
	}
}
