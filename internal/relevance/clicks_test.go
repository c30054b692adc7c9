package relevance

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

func ev(action, qid, q, doc string, pos int, dwell float64) api.UserEvent {
	return api.UserEvent{ActionName: action, QueryID: qid, UserQuery: q,
		EventAttributes: api.EventAttributes{Object: api.EventObject{ObjectID: doc}, Position: api.EventPosition{Ordinal: pos}, DwellTime: dwell}}
}

// Each grade worked out by hand in its comment.
func TestJudgeFromEvents(t *testing.T) {
	var evs []api.UserEvent
	// "Pad Thai" searched 10 times (q1..q10; spelled two ways).
	for i := 1; i <= 10; i++ {
		q := "pad thai"
		if i%2 == 0 {
			q = "  Pad  THAI "
		}
		evs = append(evs, ev("click", fmt.Sprint("q", i), q, "filler", 9, 0)) // filler at 9 in every search: 9*10/10 = 9, capped at 1 → 2
	}
	evs = append(evs,
		// a: clicked at rank 1 in 3 searches (twice in q1: once): 3/10 = 0.3 → 1.
		ev("click", "q1", "pad thai", "a", 1, 0), ev("click", "q1", "pad thai", "a", 1, 0),
		ev("click", "q2", "pad thai", "a", 1, 0), ev("click", "q3", "pad thai", "a", 1, 0),
		// b: one click at rank 5: 5/10 = 0.5 → 2.
		ev("click", "q4", "pad thai", "b", 5, 0),
		// c: one click at rank 1 (0.1 → 1), and bought → 3.
		ev("click", "q5", "pad thai", "c", 1, 0), ev("purchase", "q5", "pad thai", "c", 1, 0),
		// d: one click at rank 1 followed by a 2 s dwell: does not count,
		// not rated. e: the same with a 60 s dwell: 1/10 = 0.1 → 1.
		ev("click", "q6", "pad thai", "d", 1, 0), ev("dwell", "q6", "pad thai", "d", 1, 2),
		ev("click", "q7", "pad thai", "e", 1, 0), ev("dwell", "q7", "pad thai", "e", 1, 60),
		// f: one click at rank 2: 2/10 = 0.2 → 1. g: added to a cart → 2.
		ev("click", "q8", "pad thai", "f", 2, 0), ev("add_to_cart", "q8", "pad thai", "g", 3, 0),
	)
	// "rare": two searches only, skipped. "nothing": 5 searches with a
	// click on z at rank 1 each: 5/5 = 1 → 2. "weak": 20 searches whose
	// clicks all came straight back (1 s dwells), and one click on y at
	// rank 1: 1/20 = 0.05 → 0, no relevant document: skipped.
	evs = append(evs, ev("click", "r1", "rare", "x", 1, 0), ev("click", "r2", "rare", "x", 1, 0))
	for i := range 5 {
		evs = append(evs, ev("click", fmt.Sprint("n", i), "nothing", "z", 1, 0))
	}
	for i := range 20 {
		evs = append(evs, ev("click", fmt.Sprint("w", i), "weak", "v", 2, 0), ev("dwell", fmt.Sprint("w", i), "weak", "v", 2, 1))
	}
	evs = append(evs, ev("click", "w0", "weak", "y", 1, 0))
	qs, skipped := FromEvents(evs, ClickModel{})
	want := []api.JudgedQuery{
		{Q: "nothing", Line: 1, Ratings: map[string]int{"z": 2}},
		{Q: "pad thai", Line: 2, Ratings: map[string]int{"filler": 2, "a": 1, "b": 2, "c": 3, "e": 1, "f": 1, "g": 2}},
	}
	if skipped != 2 || !reflect.DeepEqual(qs, want) {
		t.Fatalf("skipped %d, got\n%+v\nwant\n%+v", skipped, qs, want)
	}
	// The lists it builds are valid judgement lists.
	for _, q := range qs {
		if why := Check(&q); why != "" {
			t.Fatal(why)
		}
	}
	// η = 0: no position bias, every click weighs 1: b's 1/10 → 1.
	qs, _ = FromEvents(evs, ClickModel{Eta: 1e-9})
	if qs[1].Ratings["b"] != 1 || qs[1].Ratings["filler"] != 2 {
		t.Fatalf("without the position bias: %+v", qs[1].Ratings)
	}
}
