package relevance

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Resamples and seeds of the statistics: fixed, so that the same figures
// give the same intervals and p-values on every run.
const (
	// BootstrapResamples is the number of bootstrap resamples.
	BootstrapResamples = 2000
	// RandomizationRounds is the number of random sign flips of the
	// paired randomization test.
	RandomizationRounds = 5000
	// Seed seeds every resampling (PCG).
	Seed = 15
)

// Mean is the arithmetic mean of xs, 0 for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bootstrapMeans returns the sorted means of BootstrapResamples resamples
// (with replacement, of len(xs) each) of xs, seeded.
func bootstrapMeans(xs []float64) []float64 {
	rng := rand.New(rand.NewPCG(Seed, uint64(len(xs))))
	means := make([]float64, BootstrapResamples)
	n := len(xs)
	for b := range means {
		var s float64
		for range n {
			s += xs[rng.IntN(n)]
		}
		means[b] = s / float64(n)
	}
	slices.Sort(means)
	return means
}

// quantile returns the q-quantile of sorted xs, interpolating linearly
// between order statistics.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// Interval is a mean with its two-sided percentile bootstrap confidence
// interval at level confidence (0.95: the 2.5% and 97.5% quantiles of
// the resampled means). For no values it is all zeros.
func Interval(xs []float64, confidence float64) (mean, low, high float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	means := bootstrapMeans(xs)
	a := (1 - confidence) / 2
	return Mean(xs), quantile(means, a), quantile(means, 1-a)
}

// LowerBound is the one-sided lower confidence bound, at level
// confidence, of the mean of xs by the percentile bootstrap: the
// (1-confidence)-quantile of the resampled means. Applied to paired
// differences (candidate - live, per query) it is the paired bootstrap:
// with 95% confidence the mean difference is above it.
func LowerBound(xs []float64, confidence float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return quantile(bootstrapMeans(xs), 1-confidence)
}

// PairedDiffs returns b[i] - a[i] for each i (a and b of equal length).
func PairedDiffs(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	return d
}

// RandomizationTest is the two-sided p-value of a paired randomization
// (sign-flip) test that the mean of the paired differences d is 0: under
// that hypothesis each difference is as likely to have either sign, so
// the observed |mean| is compared with RandomizationRounds means of d
// with random signs (seeded). p = (1 + rounds at least as extreme) / (1 +
// rounds). No differences, or all zero, give 1.
func RandomizationTest(d []float64) float64 {
	obs := math.Abs(Mean(d))
	if len(d) == 0 || obs == 0 {
		return 1
	}
	rng := rand.New(rand.NewPCG(Seed, uint64(len(d))+1))
	// A tiny tolerance keeps rounding from deciding "as extreme".
	eps := 1e-12 * math.Max(1, obs)
	extreme := 0
	for range RandomizationRounds {
		var s float64
		for _, x := range d {
			if rng.Uint64()&1 == 0 {
				s += x
			} else {
				s -= x
			}
		}
		if math.Abs(s/float64(len(d))) >= obs-eps {
			extreme++
		}
	}
	return float64(1+extreme) / float64(1+RandomizationRounds)
}
