package loadgen

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// precision is the number of bits below a value's leading one that its
// bucket keeps: 2^precision buckets per power of two, a relative error
// under 2^-precision (0.4%).
const precision = 8

// buckets covers every non-negative int64: exact values below
// 2^(precision+1), then 2^precision buckets for each further power of two.
const buckets = (64 - precision) << precision

// Histogram counts durations in log-linear buckets. Record is lock-free
// and may be called concurrently with itself; read a histogram (Quantile,
// Count…) once its recording is over. The zero value is empty and ready.
type Histogram struct {
	counts   [buckets]atomic.Int64
	count    atomic.Int64
	sum      atomic.Int64
	min, max atomic.Int64 // min is stored as ^value so that zero means none
}

// bucketOf returns the bucket of a value ≥ 0.
func bucketOf(v uint64) int {
	if v < 1<<(precision+1) {
		return int(v)
	}
	shift := bits.Len64(v) - (precision + 1) // ≥ 1
	m := v >> shift                          // in [2^precision, 2^(precision+1))
	return (shift+1)<<precision + int(m-1<<precision)
}

// bucketHigh is the highest value of a bucket.
func bucketHigh(b int) uint64 {
	if b < 1<<(precision+1) {
		return uint64(b)
	}
	shift := b>>precision - 1
	m := uint64(b&(1<<precision-1)) + 1<<precision
	hi := (m+1)<<shift - 1
	if hi > math.MaxInt64 {
		return math.MaxInt64
	}
	return hi
}

// Record adds one duration (negative durations count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))].Add(1)
	h.count.Add(1)
	h.sum.Add(v)
	for {
		old := h.max.Load()
		if v <= old || h.max.CompareAndSwap(old, v) {
			break
		}
	}
	for {
		old := h.min.Load()
		if (old != 0 && v >= ^old) || h.min.CompareAndSwap(old, ^v) {
			break
		}
	}
}

// Merge adds every count of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count() == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.count.Add(o.count.Load())
	h.sum.Add(o.sum.Load())
	for {
		old, v := h.max.Load(), o.max.Load()
		if v <= old || h.max.CompareAndSwap(old, v) {
			break
		}
	}
	for {
		old, v := h.min.Load(), o.Min()
		if (old != 0 && int64(v) >= ^old) || h.min.CompareAndSwap(old, ^int64(v)) {
			break
		}
	}
}

// Count is the number of recorded durations.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Max is the largest recorded duration (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min is the smallest recorded duration (exact; 0 if none).
func (h *Histogram) Min() time.Duration {
	if m := h.min.Load(); m != 0 {
		return time.Duration(^m)
	}
	return 0
}

// Mean is the mean recorded duration (exact).
func (h *Histogram) Mean() time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the duration at or below which a share q (0 to 1) of
// the recorded durations fall: the highest value of the bucket holding
// the ⌈q·count⌉-th smallest, capped by Max (so never below the true
// value, and at most 0.4% above it). Quantile(0) is Min, Quantile(1) Max.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	if q >= 1 {
		return h.Max()
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen int64
	for b := range h.counts {
		seen += h.counts[b].Load()
		if seen >= rank {
			return min(time.Duration(bucketHigh(b)), h.Max())
		}
	}
	return h.Max()
}
