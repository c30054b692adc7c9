package relevance

import (
	"math"
	"slices"
	"strings"

	"github.com/quarrysearch/quarry/api"
)

// ClickModel turns user events into graded judgements
// (docs/relevance.md, "Judgements from events"). Zero fields take the
// defaults.
type ClickModel struct {
	// Eta is the position bias's power: a result at rank p is examined
	// with probability θ(p) = (1/p)^Eta (default 1).
	Eta float64
	// MinQueries leaves out texts searched fewer times (distinct query
	// ids with events; default 5).
	MinQueries int
	// ShortDwell: a click followed by a dwell shorter than this many
	// seconds on the same result of the same search does not count
	// (default 5).
	ShortDwell float64
}

// Defaults of ClickModel.
const (
	DefaultEta        = 1.0
	DefaultMinQueries = 5
	DefaultShortDwell = 5.0
)

// Grade thresholds on the debiased click rate.
const (
	// Grade2Rate and Grade1Rate are the debiased click rates from which a
	// clicked document is graded 2 and 1 (below: 0).
	Grade2Rate = 0.5
	Grade1Rate = 0.1
)

// normalize is how two texts are the same query: case and spacing aside.
func normalize(q string) string { return strings.Join(strings.Fields(strings.ToLower(q)), " ") }

// FromEvents builds a judgement list from user events with a
// position-based click model and inverse propensity weighting:
//
//   - events are grouped by query text (case and spacing aside); n(q) is
//     the number of distinct query ids with events for q. A text with
//     n(q) < MinQueries is left out (skipped counts them).
//   - each click on d at rank p counts 1/θ(p), θ(p) = (1/p)^Eta: a click
//     low on the page, where few users look, is worth more. One search's
//     clicks on one result count once, and not at all when a dwell of
//     under ShortDwell seconds on it follows (the user came straight back).
//   - the debiased click rate of d for q is the sum over n(q), capped at 1.
//   - grade 3: d was purchased after a search for q; 2: added to a cart,
//     or a rate >= 0.5; 1: a rate >= 0.1; 0: clicked less.
//
// A text left with no document graded above 0 is left out too (it cannot
// tell two rankings apart). Queries come sorted by text, numbered as lines
// from 1: the same events give the same list.
func FromEvents(evs []api.UserEvent, m ClickModel) (qs []api.JudgedQuery, skipped int) {
	if m.Eta <= 0 {
		m.Eta = DefaultEta
	}
	if m.MinQueries <= 0 {
		m.MinQueries = DefaultMinQueries
	}
	if m.ShortDwell <= 0 {
		m.ShortDwell = DefaultShortDwell
	}
	type hit struct{ qid, doc string }
	type perQuery struct {
		text   string
		ids    map[string]bool
		clicks map[hit]int // rank of the click
		short  map[hit]bool
		cart   map[string]bool
		bought map[string]bool
	}
	byText := map[string]*perQuery{}
	for _, e := range evs {
		key := normalize(e.UserQuery)
		if key == "" {
			continue
		}
		pq := byText[key]
		if pq == nil {
			pq = &perQuery{text: key, ids: map[string]bool{}, clicks: map[hit]int{}, short: map[hit]bool{}, cart: map[string]bool{}, bought: map[string]bool{}}
			byText[key] = pq
		}
		pq.ids[e.QueryID] = true
		doc := e.EventAttributes.Object.ObjectID
		h := hit{e.QueryID, doc}
		switch e.ActionName {
		case api.ActionClick:
			if p, ok := pq.clicks[h]; !ok || e.EventAttributes.Position.Ordinal < p {
				pq.clicks[h] = e.EventAttributes.Position.Ordinal
			}
		case api.ActionDwell:
			if e.EventAttributes.DwellTime < m.ShortDwell {
				pq.short[h] = true
			}
		case api.ActionAddToCart:
			pq.cart[doc] = true
		case api.ActionPurchase:
			pq.bought[doc] = true
		}
	}
	texts := make([]string, 0, len(byText))
	for t := range byText {
		texts = append(texts, t)
	}
	slices.Sort(texts)
	for _, t := range texts {
		pq := byText[t]
		n := len(pq.ids)
		if n < m.MinQueries {
			skipped++
			continue
		}
		weight := map[string]float64{}
		for h, p := range pq.clicks {
			if pq.short[h] {
				continue
			}
			weight[h.doc] += math.Pow(float64(p), m.Eta) // 1/θ(p)
		}
		ratings := map[string]int{}
		grade := func(doc string, g int) { ratings[doc] = max(ratings[doc], g) }
		for doc, w := range weight {
			rate := min(1, w/float64(n))
			switch {
			case rate >= Grade2Rate:
				grade(doc, 2)
			case rate >= Grade1Rate:
				grade(doc, 1)
			default:
				grade(doc, 0)
			}
		}
		for doc := range pq.cart {
			grade(doc, 2)
		}
		for doc := range pq.bought {
			grade(doc, 3)
		}
		relevant := false
		for _, g := range ratings {
			relevant = relevant || g > 0
		}
		if !relevant {
			skipped++
			continue
		}
		qs = append(qs, api.JudgedQuery{Q: pq.text, Ratings: ratings, Line: len(qs) + 1})
	}
	return qs, skipped
}
