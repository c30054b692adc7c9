package rankcmp

import (
	"cmp"
	"slices"
)

// OverlapAt is overlap@k: the share of a's first k items that are also
// among b's first k. When a has none: 1 if b has none either (both
// rankings agree that nothing matched), else 0.
func OverlapAt[T comparable](k int, a, b []T) float64 {
	a, b = a[:min(k, len(a))], b[:min(k, len(b))]
	if len(a) == 0 {
		if len(b) == 0 {
			return 1
		}
		return 0
	}
	in := positions(b)
	hit := 0
	for _, x := range a {
		if _, ok := in[x]; ok {
			hit++
		}
	}
	return float64(hit) / float64(len(a))
}

// Spearman is Spearman's rank correlation of the orders a and b give the
// items they both hold (each ranked among those only): 1 for the same
// order, -1 for the reverse, 1 with a single item in common, 0 with none.
func Spearman[T comparable](a, b []T) float64 {
	inB := positions(b)
	var ra, rb []float64 // ranks among the shared items
	for _, x := range a {
		if j, ok := inB[x]; ok {
			ra = append(ra, float64(len(ra)))
			rb = append(rb, float64(j))
		}
	}
	n := len(ra)
	switch n {
	case 0:
		return 0
	case 1:
		return 1
	}
	// rb holds positions in b; turn them into ranks 0..n-1.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(rb[x], rb[y]) })
	for rank, i := range order {
		rb[i] = float64(rank)
	}
	var d2 float64
	for i := range ra {
		d := ra[i] - rb[i]
		d2 += d * d
	}
	nf := float64(n)
	return 1 - 6*d2/(nf*(nf*nf-1))
}

// positions maps each item of s to its first position.
func positions[T comparable](s []T) map[T]int {
	m := make(map[T]int, len(s))
	for i, x := range s {
		if _, ok := m[x]; !ok {
			m[x] = i
		}
	}
	return m
}
