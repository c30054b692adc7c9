package loadgen

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 511, 512, 513, 1023, 1024, 1 << 20, 1<<20 + 12345, 1 << 40, 1<<63 - 1} {
		b := bucketOf(v)
		if b < prev {
			t.Errorf("bucket of %d is %d, before %d", v, b, prev)
		}
		prev = b
		if b < 0 || b >= buckets {
			t.Fatalf("bucket of %d is %d, outside [0, %d)", v, b, buckets)
		}
		hi := bucketHigh(b)
		if hi < v || float64(hi-v) > float64(v)/256+1 {
			t.Errorf("value %d: bucket %d's high %d is not within 0.4%% above it", v, b, hi)
		}
		if b > 0 && bucketHigh(b-1) >= v {
			t.Errorf("value %d: the bucket before its own (%d) holds it too", v, b-1)
		}
	}
}

// The histogram's quantiles are within 0.4% of exact ones on sorted
// samples, recorded concurrently.
func TestQuantiles(t *testing.T) {
	cases := []struct {
		name string
		gen  func(r *rand.Rand) time.Duration
	}{
		{"uniform 0-10ms", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(10 * time.Millisecond))) }},
		{"exponential 1ms", func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * float64(time.Millisecond)) }},
		{"small ns", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(600)) }},
		{"constant", func(*rand.Rand) time.Duration { return 1234567 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h Histogram
			const workers, each = 4, 5000
			all := make([][]time.Duration, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 7))
					for range each {
						d := c.gen(r)
						all[w] = append(all[w], d)
						h.Record(d)
					}
				})
			}
			wg.Wait()
			exact := slices.Concat(all...)
			slices.Sort(exact)
			if h.Count() != int64(len(exact)) || h.Min() != exact[0] || h.Max() != exact[len(exact)-1] {
				t.Fatalf("count %d min %v max %v, want %d %v %v", h.Count(), h.Min(), h.Max(), len(exact), exact[0], exact[len(exact)-1])
			}
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
				want := exact[int(q*float64(len(exact))+0.999999)-1]
				got := h.Quantile(q)
				if got < want || float64(got-want) > float64(want)/256+1 {
					t.Errorf("q%g = %v, exact %v", q, got, want)
				}
			}
		})
	}
}

func TestMergeAndEmpty(t *testing.T) {
	var a, b, empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 || empty.Min() != 0 || empty.Max() != 0 {
		t.Fatal("an empty histogram is not all zero")
	}
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
		b.Record(time.Duration(i) * time.Millisecond)
	}
	a.Merge(&b)
	a.Merge(&empty)
	if a.Count() != 200 || a.Min() != time.Microsecond || a.Max() != 100*time.Millisecond {
		t.Fatalf("merged: count %d min %v max %v", a.Count(), a.Min(), a.Max())
	}
	if q := a.Quantile(0.5); q < 100*time.Microsecond || q > 101*time.Microsecond {
		t.Errorf("merged p50 %v, want 100µs", q)
	}
	a.Record(-5)
	if a.Min() != 0 {
		t.Errorf("a negative duration counts as %v, want 0", a.Min())
	}
}
