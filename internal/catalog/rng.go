package catalog

import (
	"math/bits"
	"math/rand/v2"
)

// pcgStream is the PCG stream selector used for every catalogue. Changing it
// changes every generated catalogue.
const pcgStream = 0x5175617272794361 // "QuarryCa"

// rng draws bounded integers from a PCG source. The bounding algorithm is
// implemented here rather than taken from rand.Rand so that the generated
// sequence depends only on the PCG definition, not on the implementation of
// rand.Rand's helpers in a particular Go release.
type rng struct {
	src *rand.PCG
}

func newRNG(seed uint64) *rng {
	return &rng{src: rand.NewPCG(seed, pcgStream)}
}

// intn returns a uniform integer in [0, n). n must be positive.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("catalog: intn called with non-positive bound")
	}
	// Lemire's multiply-and-reject method.
	bound := uint64(n)
	hi, lo := bits.Mul64(r.src.Uint64(), bound)
	if lo < bound {
		threshold := -bound % bound
		for lo < threshold {
			hi, lo = bits.Mul64(r.src.Uint64(), bound)
		}
	}
	return int(hi)
}

// between returns a uniform integer in [lo, hi].
func (r *rng) between(lo, hi int) int {
	return lo + r.intn(hi-lo+1)
}

// chance reports true with probability pct/100.
func (r *rng) chance(pct int) bool {
	return r.intn(100) < pct
}

// pick returns a uniform element of s.
func pick[T any](r *rng, s []T) T {
	return s[r.intn(len(s))]
}

// weighted returns an index into weights, chosen with probability
// proportional to its weight.
func (r *rng) weighted(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := r.intn(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}
