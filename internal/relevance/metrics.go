package relevance

import (
	"math"
	"slices"
	"strings"
)

// Metric names, as the gate and reports spell them.
const (
	NDCG         = "ndcg"
	MRR          = "mrr"
	Precision    = "precision"
	Recall       = "recall"
	ZeroRelevant = "zero_relevant"
)

// Metrics lists the metrics in the order reports print them.
var Metrics = []string{NDCG, MRR, Precision, Recall, ZeroRelevant}

// GateMetrics are the metrics a gate may use (higher is better).
var GateMetrics = []string{NDCG, MRR, Precision, Recall}

// Scores are one ranking's metrics for one query at depth k.
type Scores struct {
	// NDCG is DCG@k over the ideal DCG@k, with gain 2^r - 1 and discount
	// log2(rank + 1); 0 when no document is rated above 0.
	NDCG float64
	// RR is 1/rank of the first relevant document (rating >= 1) in the
	// top k, 0 if there is none.
	RR float64
	// Precision is the relevant documents in the top k over k (not over
	// the hits returned: a short list is not rewarded).
	Precision float64
	// Recall is the relevant documents in the top k over every relevant
	// document rated; 0 when none is.
	Recall float64
	// ZeroRelevant is 1 when the top k holds no relevant document, else 0.
	ZeroRelevant float64
}

// Get returns a metric by name (see Metrics); ok is false for an unknown
// name.
func (s Scores) Get(metric string) (v float64, ok bool) {
	switch metric {
	case NDCG:
		return s.NDCG, true
	case MRR:
		return s.RR, true
	case Precision:
		return s.Precision, true
	case Recall:
		return s.Recall, true
	case ZeroRelevant:
		return s.ZeroRelevant, true
	}
	return 0, false
}

// Score computes the metrics of a ranking (document ids, best first) at
// depth k against graded ratings (unrated documents count as 0). A
// document listed twice counts once, at its first rank. k must be >= 1.
func Score(ranking []string, ratings map[string]int, k int) Scores {
	var s Scores
	if k < 1 {
		return s
	}
	relevant := 0
	for _, r := range ratings {
		if r > 0 {
			relevant++
		}
	}
	var dcg float64
	found := 0
	seen := make(map[string]bool, min(k, len(ranking)))
	rank := 0
	for _, id := range ranking {
		if rank == k {
			break
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		rank++
		r := ratings[id]
		if r <= 0 {
			continue
		}
		dcg += gain(r) / math.Log2(float64(rank)+1)
		found++
		if s.RR == 0 {
			s.RR = 1 / float64(rank)
		}
	}
	if ideal := idealDCG(ratings, k); ideal > 0 {
		s.NDCG = dcg / ideal
	}
	s.Precision = float64(found) / float64(k)
	if relevant > 0 {
		s.Recall = float64(found) / float64(relevant)
	}
	if found == 0 {
		s.ZeroRelevant = 1
	}
	return s
}

// gain is a grade's gain: 2^r - 1.
func gain(r int) float64 { return math.Exp2(float64(r)) - 1 }

// idealDCG is the DCG@k of the ratings sorted best first.
func idealDCG(ratings map[string]int, k int) float64 {
	grades := make([]int, 0, len(ratings))
	for _, r := range ratings {
		if r > 0 {
			grades = append(grades, r)
		}
	}
	slices.Sort(grades)
	slices.Reverse(grades)
	var dcg float64
	for i, r := range grades[:min(k, len(grades))] {
		dcg += gain(r) / math.Log2(float64(i)+2)
	}
	return dcg
}

// sortedIDs returns a rating map's ids in order.
func sortedIDs(m map[string]int) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, strings.Compare)
	return ids
}
