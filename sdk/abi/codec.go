package abi

import (
	"math"
	"slices"
)

// AppendRewriteRequest appends the encoding of req to b.
func AppendRewriteRequest(b []byte, req *RewriteRequest) []byte {
	b = appendString(b, req.Q)
	b = appendBytes(b, req.Query)
	b = appendBytes(b, req.Filter)
	b = appendBytes(b, req.Context)
	b = appendU32(b, req.Size)
	return appendU32(b, req.From)
}

// DecodeRewriteRequest decodes a rewrite request. Byte fields alias data.
func DecodeRewriteRequest(data []byte, req *RewriteRequest) error {
	r := reader{b: data}
	req.Q = r.str()
	req.Query = r.bytes()
	req.Filter = r.bytes()
	req.Context = r.bytes()
	req.Size = r.u32()
	req.From = r.u32()
	return r.done()
}

// AppendRewriteResponse appends a StatusOK response for resp to b.
func AppendRewriteResponse(b []byte, resp *RewriteResponse) []byte {
	b = append(b, StatusOK, resp.Flags)
	if resp.Flags&FlagQ != 0 {
		b = appendString(b, resp.Q)
	}
	if resp.Flags&FlagQuery != 0 {
		b = appendBytes(b, resp.Query)
	}
	if resp.Flags&FlagFilter != 0 {
		b = appendBytes(b, resp.Filter)
	}
	if resp.Flags&FlagRerankDepth != 0 {
		b = appendU32(b, resp.RerankDepth)
	}
	return b
}

// AppendError appends a StatusError response with msg to b.
func AppendError(b []byte, msg string) []byte {
	return append(append(b, StatusError), msg...)
}

// GuestError is an error a plugin reported (StatusError).
type GuestError struct{ Message string }

func (e *GuestError) Error() string { return "plugin error: " + e.Message }

// status splits a response into its status and body; a StatusError becomes
// a *GuestError.
func status(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, ErrMalformed
	}
	switch data[0] {
	case StatusOK:
		return data[1:], nil
	case StatusError:
		return nil, &GuestError{Message: string(data[1:])}
	}
	return nil, ErrMalformed
}

// DecodeRewriteResponse decodes a rewrite response (with its status byte).
func DecodeRewriteResponse(data []byte, resp *RewriteResponse) error {
	body, err := status(data)
	if err != nil {
		return err
	}
	r := reader{b: body}
	resp.Flags = r.u8()
	if resp.Flags&^(FlagQ|FlagQuery|FlagFilter|FlagRerankDepth) != 0 {
		return ErrMalformed
	}
	if resp.Flags&FlagQ != 0 {
		resp.Q = r.str()
	}
	if resp.Flags&FlagQuery != 0 {
		resp.Query = r.bytes()
	}
	if resp.Flags&FlagFilter != 0 {
		resp.Filter = r.bytes()
	}
	if resp.Flags&FlagRerankDepth != 0 {
		resp.RerankDepth = r.u32()
	}
	return r.done()
}

// pad8 is how many zero bytes bring offset n to a multiple of 8.
func pad8(n int) int { return (8 - n%8) % 8 }

// AppendRankRequest appends the encoding of req to b. Fields are sent as
// columns; a field whose values are all numbers (or missing) is a dense
// column of f64, aligned to 8 bytes from the request's start, that a guest
// can read in place as an array.
func AppendRankRequest(b []byte, req *RankRequest) []byte {
	start := len(b)
	b = appendString(b, req.Q)
	b = appendBytes(b, req.Context)
	b = appendU32(b, uint32(len(req.Fields)))
	for _, f := range req.Fields {
		b = appendString(b, f)
	}
	b = appendU32(b, uint32(len(req.Candidates)))
	idsLen := 0
	for i := range req.Candidates {
		idsLen += 4 + len(req.Candidates[i].ID)
	}
	b = appendU32(b, uint32(idsLen)) // lets a guest skip the ids in one step
	for i := range req.Candidates {
		b = appendString(b, req.Candidates[i].ID)
	}
	for i := range req.Candidates {
		b = appendF64(b, req.Candidates[i].Score)
	}
	for j := range req.Fields {
		value := func(c *Candidate) *Value {
			if j < len(c.Values) {
				return &c.Values[j]
			}
			return nil
		}
		numeric := true
		for i := range req.Candidates {
			if v := value(&req.Candidates[i]); v != nil && v.Kind != KindNumber && v.Kind != KindMissing {
				numeric = false
				break
			}
		}
		if numeric {
			b = append(b, ColumnNumbers)
			b = append(b, make([]byte, pad8(len(b)-start))...)
			for i := range req.Candidates {
				n := math.NaN()
				if v := value(&req.Candidates[i]); v != nil && v.Kind == KindNumber {
					n = v.Num
				}
				b = appendF64(b, n)
			}
			continue
		}
		b = append(b, ColumnValues)
		for i := range req.Candidates {
			b = appendValue(b, value(&req.Candidates[i]))
		}
	}
	return b
}

func appendValue(b []byte, v *Value) []byte {
	if v == nil {
		return append(b, KindMissing)
	}
	b = append(b, v.Kind)
	switch v.Kind {
	case KindNumber:
		b = appendF64(b, v.Num)
	case KindString:
		b = appendString(b, v.Str)
	case KindBool:
		if v.Bool {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case KindList:
		b = appendU32(b, uint32(len(v.List)))
		for i := range v.List {
			b = appendValue(b, &v.List[i])
		}
	}
	return b
}

// DecodeRankRequest decodes a rank request into rows.
func DecodeRankRequest(data []byte, req *RankRequest) error {
	r := reader{b: data}
	req.Q = r.str()
	req.Context = r.bytes()
	nf := r.count(4)
	req.Fields = make([]string, nf)
	for i := range req.Fields {
		req.Fields[i] = r.str()
	}
	nc := r.count(12 + nf)
	idsLen := r.u32()
	before := len(r.b)
	req.Candidates = make([]Candidate, nc)
	for i := range req.Candidates {
		req.Candidates[i].ID = r.str()
	}
	if r.err == nil && uint32(before-len(r.b)) != idsLen {
		return ErrMalformed
	}
	for i := range req.Candidates {
		req.Candidates[i].Score = r.f64()
		if nf > 0 {
			req.Candidates[i].Values = make([]Value, nf)
		}
	}
	for j := range nf {
		switch r.u8() {
		case ColumnNumbers:
			off := len(data) - len(r.b)
			for range pad8(off) {
				r.u8()
			}
			for i := range req.Candidates {
				if n := r.f64(); n == n {
					req.Candidates[i].Values[j] = Value{Kind: KindNumber, Num: n}
				}
			}
		case ColumnValues:
			for i := range req.Candidates {
				r.value(&req.Candidates[i].Values[j], 0)
			}
		default:
			r.err = ErrMalformed
		}
		if r.err != nil {
			return r.err
		}
	}
	return r.done()
}

const maxValueDepth = 4

func (r *reader) value(v *Value, depth int) {
	v.Kind = r.u8()
	switch v.Kind {
	case KindMissing:
	case KindNumber:
		v.Num = r.f64()
	case KindString:
		v.Str = r.str()
	case KindBool:
		v.Bool = r.u8() != 0
	case KindList:
		if depth >= maxValueDepth {
			r.err = ErrMalformed
			return
		}
		n := r.count(1)
		v.List = make([]Value, n)
		for i := range v.List {
			r.value(&v.List[i], depth+1)
		}
	default:
		r.err = ErrMalformed
	}
}

// AppendRankResponse appends a StatusOK response for resp to b.
func AppendRankResponse(b []byte, resp *RankResponse) []byte {
	b = append(b, StatusOK, resp.Flags)
	b = appendU32(b, uint32(len(resp.Ranked)))
	for _, e := range resp.Ranked {
		b = appendU32(b, e.Index)
		b = appendF64(b, e.Score)
	}
	return b
}

// DecodeRankResponse decodes a rank response (with its status byte) for a
// request of n candidates: every index must be < n and appear once.
func DecodeRankResponse(data []byte, n int, resp *RankResponse) error {
	body, err := status(data)
	if err != nil {
		return err
	}
	r := reader{b: body}
	resp.Flags = r.u8()
	if resp.Flags&^RankSortByScore != 0 {
		return ErrMalformed
	}
	count := r.count(12)
	if count > n {
		return ErrMalformed
	}
	resp.Ranked = slices.Grow(resp.Ranked[:0], count)
	seen := make([]bool, n)
	for range count {
		i, s := r.u32(), r.f64()
		if r.err != nil || int(i) >= n || seen[i] || s != s { // NaN refused
			return ErrMalformed
		}
		seen[i] = true
		resp.Ranked = append(resp.Ranked, Ranked{Index: i, Score: s})
	}
	if err := r.done(); err != nil {
		return err
	}
	if resp.Flags&RankSortByScore != 0 {
		sortByScore(resp.Ranked)
	}
	return nil
}

// sortByScore sorts entries by score, highest first, ties in their given
// order: an LSD radix sort on the scores' bits (stable by construction,
// and ~3× faster than a comparison sort of 1,000 entries); passes where
// every key has the same byte are skipped.
func sortByScore(r []Ranked) {
	n := len(r)
	if n < 2 {
		return
	}
	keys := make([]uint64, 2*n)
	a, b := keys[:n], keys[n:]
	src, dst := r, make([]Ranked, n)
	for i, e := range r {
		f := e.Score
		if f == 0 {
			f = 0 // -0 sorts with +0
		}
		k := math.Float64bits(f)
		if k>>63 == 1 {
			k = ^k
		} else {
			k |= 1 << 63
		}
		a[i] = ^k // descending
	}
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, k := range a {
			count[byte(k>>shift)]++
		}
		if count[byte(a[0]>>shift)] == n {
			continue // every key has this byte: nothing moves
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i, k := range a {
			j := count[byte(k>>shift)]
			count[byte(k>>shift)]++
			b[j] = k
			dst[j] = src[i]
		}
		a, b = b, a
		src, dst = dst, src
	}
	if &src[0] != &r[0] {
		copy(r, src)
	}
}
