package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/jsonenc"
)

// Shard responses travel in a compact binary form rather than JSON:
// BenchmarkShardResponse measured JSON at ~4 µs and 24 allocations per hit
// with stored fields, as much as the search itself at a rerank depth of
// 100. The layout, all integers as varints unless noted:
//
//	"QS" version(1)
//	total, max_score (float64 LE), took_ns (signed), seq, generation,
//	replica, queue_ns (signed)
//	hit count, then per hit:
//	  id, score (float64 LE), sort key count + strings, a count + strings
//	  no longer written (0; older searchers sent bleve's decoded sort
//	  values there, which are skipped), then the stored fields: version
//	  2, their length (uint32 LE, 0 for none) and a JSON object, as
//	  encoding/json writes it (api/jsonenc), which the broker copies into
//	  its response as it is (api.Hit.FieldsJSON); version 1, a field count
//	  + (name, value), still read
//	facets: length + JSON (rare and small; api.FacetResult by name, which
//	  reads bleve's search.FacetResults JSON that older searchers sent)
//	statistics, only when the request asked the shard to count them
//	(ShardRequest.LocalStats): length + JSON
//
// A string is its length then its bytes. A version 1 value is a tag byte
// then: 's' string, 'n' float64 LE, 't'/'f' bool, 'z' null, 'a' count +
// values, 'j' a string holding JSON (anything else, e.g. objects).
const (
	binMagic0, binMagic1 = 'Q', 'S'
	binVersion           = 2
	binVersionMaps       = 1 // fields as tagged values (older searchers)
	maxValueDepth        = 8
)

// ErrMalformed reports a binary shard response that cannot be decoded.
var ErrMalformed = errors.New("malformed shard response")

// AppendShardResponse appends r's binary encoding to b.
func AppendShardResponse(b []byte, r *ShardResponse) ([]byte, error) {
	b = append(b, binMagic0, binMagic1, binVersion)
	b = binary.AppendUvarint(b, r.Total)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.MaxScore))
	b = binary.AppendVarint(b, r.TookNS)
	b = binary.AppendUvarint(b, r.Seq)
	b = binary.AppendUvarint(b, r.Generation)
	b = appendString(b, r.Replica)
	b = binary.AppendVarint(b, r.QueueNS)
	b = binary.AppendUvarint(b, uint64(len(r.Hits)))
	var err error
	var keys []string // scratch for each hit's field names, sorted
	for i := range r.Hits {
		h := &r.Hits[i]
		b = appendString(b, h.ID)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Score))
		b = binary.AppendUvarint(b, uint64(len(h.SortKeys)))
		for _, s := range h.SortKeys {
			b = appendString(b, s)
		}
		b = binary.AppendUvarint(b, 0) // no decoded sort values
		at := len(b)
		b = append(b, 0, 0, 0, 0) // the fields' length, once known
		switch {
		case h.Fields != nil:
			if len(h.Fields) > 0 {
				if b, err = jsonenc.AppendObject(b, h.Fields, &keys); err != nil {
					return nil, fmt.Errorf("hit %q fields: %w", h.ID, err)
				}
			}
		case len(h.FieldsJSON) > 0:
			b = append(b, h.FieldsJSON...)
		}
		if n := len(b) - at - 4; n > math.MaxUint32 {
			return nil, fmt.Errorf("hit %q fields: %d bytes", h.ID, n)
		} else {
			binary.LittleEndian.PutUint32(b[at:], uint32(n))
		}
	}
	if len(r.Facets) == 0 {
		b = binary.AppendUvarint(b, 0)
	} else {
		fj, err := json.Marshal(r.Facets)
		if err != nil {
			return nil, fmt.Errorf("encode facets: %w", err)
		}
		b = binary.AppendUvarint(b, uint64(len(fj)))
		b = append(b, fj...)
	}
	if r.Stats == nil {
		return b, nil
	}
	sj, err := json.Marshal(r.Stats)
	if err != nil {
		return nil, fmt.Errorf("encode statistics: %w", err)
	}
	b = binary.AppendUvarint(b, uint64(len(sj)))
	return append(b, sj...), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the binary form; every length is checked against what is
// left, so hostile input costs at most its own size.
type decoder struct {
	b       []byte
	version byte
	keys    map[string]string // version 1: interned field names, they repeat on every hit
	kept    bool              // b is decoder's own copy, which hits' fields refer to
}

// fieldsJSON reads a hit's stored fields (nil: none). They refer to one
// copy of the rest of the message, made at the first hit with fields:
// one allocation for every hit's, not one each, and nothing of the
// caller's (pooled) buffer kept. The object is checked for its braces
// only: searchers write it with api/jsonenc, and the broker copies it.
func (d *decoder) fieldsJSON() (json.RawMessage, error) {
	if len(d.b) < 4 {
		return nil, ErrMalformed
	}
	n := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	if n == 0 {
		return nil, nil
	}
	if uint64(n) > uint64(len(d.b)) || n < 2 || d.b[0] != '{' || d.b[n-1] != '}' {
		return nil, ErrMalformed
	}
	if !d.kept {
		d.b, d.kept = bytes.Clone(d.b), true
	}
	f := d.b[:n:n]
	d.b = d.b[n:]
	return f, nil
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, ErrMalformed
	}
	d.b = d.b[n:]
	return v, nil
}

// count reads a count of items each at least minSize bytes long.
func (d *decoder) count(minSize int) (int, error) {
	v, err := d.uvarint()
	if err != nil || v > uint64(len(d.b)/minSize) {
		return 0, ErrMalformed
	}
	return int(v), nil
}

func (d *decoder) float() (float64, error) {
	if len(d.b) < 8 {
		return 0, ErrMalformed
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v, nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil || n > uint64(len(d.b)) {
		return nil, ErrMalformed
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) str() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func (d *decoder) key() (string, error) {
	b, err := d.bytes()
	if err != nil {
		return "", err
	}
	if k, ok := d.keys[string(b)]; ok {
		return k, nil
	}
	k := string(b)
	if len(d.keys) < 256 {
		d.keys[k] = k
	}
	return k, nil
}

func (d *decoder) value(depth int) (any, error) {
	if len(d.b) == 0 || depth > maxValueDepth {
		return nil, ErrMalformed
	}
	tag := d.b[0]
	d.b = d.b[1:]
	switch tag {
	case 's':
		return d.str()
	case 'n':
		return d.float()
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'z':
		return nil, nil
	case 'a':
		n, err := d.count(1)
		if err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case 'j':
		b, err := d.bytes()
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, ErrMalformed
		}
		return v, nil
	}
	return nil, ErrMalformed
}

// UnmarshalShardResponse decodes the binary form into r.
func UnmarshalShardResponse(data []byte, r *ShardResponse) error {
	if len(data) < 3 || data[0] != binMagic0 || data[1] != binMagic1 {
		return fmt.Errorf("%w: not a binary shard response", ErrMalformed)
	}
	if data[2] != binVersion && data[2] != binVersionMaps {
		return fmt.Errorf("%w: version %d, this build reads %d and %d", ErrMalformed, data[2], binVersionMaps, binVersion)
	}
	d := decoder{b: data[3:], version: data[2]}
	if d.version == binVersionMaps {
		d.keys = map[string]string{}
	}
	err := d.decode(r)
	if err == nil && len(d.b) != 0 {
		err = ErrMalformed
	}
	if err != nil {
		return fmt.Errorf("decode shard response: %w", err)
	}
	return nil
}

func (d *decoder) decode(r *ShardResponse) (err error) {
	if r.Total, err = d.uvarint(); err != nil {
		return err
	}
	if r.MaxScore, err = d.float(); err != nil {
		return err
	}
	took, n := binary.Varint(d.b)
	if n <= 0 {
		return ErrMalformed
	}
	r.TookNS, d.b = took, d.b[n:]
	if r.Seq, err = d.uvarint(); err != nil {
		return err
	}
	if r.Generation, err = d.uvarint(); err != nil {
		return err
	}
	if r.Replica, err = d.str(); err != nil {
		return err
	}
	q, n := binary.Varint(d.b)
	if n <= 0 {
		return ErrMalformed
	}
	r.QueueNS, d.b = q, d.b[n:]
	nhits, err := d.count(12) // id length, score, three counts
	if err != nil {
		return err
	}
	r.Hits = make([]api.Hit, nhits)
	for i := range r.Hits {
		h := &r.Hits[i]
		if h.ID, err = d.str(); err != nil {
			return err
		}
		if h.Score, err = d.float(); err != nil {
			return err
		}
		ns, err := d.count(1)
		if err != nil {
			return err
		}
		if ns > 0 {
			h.SortKeys = make([]string, ns)
			for j := range h.SortKeys {
				if h.SortKeys[j], err = d.str(); err != nil {
					return err
				}
			}
		}
		nd, err := d.count(1)
		if err != nil {
			return err
		}
		for range nd { // an older searcher's decoded sort values: unused
			if _, err := d.bytes(); err != nil {
				return err
			}
		}
		if d.version == binVersion {
			if h.FieldsJSON, err = d.fieldsJSON(); err != nil {
				return err
			}
			continue
		}
		nf, err := d.count(2)
		if err != nil {
			return err
		}
		if nf > 0 {
			h.Fields = make(map[string]any, nf)
			for range nf {
				k, err := d.key()
				if err != nil {
					return err
				}
				if h.Fields[k], err = d.value(0); err != nil {
					return err
				}
			}
		}
	}
	fj, err := d.bytes()
	if err != nil {
		return err
	}
	if len(fj) > 0 {
		if err := json.Unmarshal(fj, &r.Facets); err != nil {
			return ErrMalformed
		}
	}
	if len(d.b) == 0 {
		return nil
	}
	sj, err := d.bytes()
	if err != nil {
		return err
	}
	r.Stats = new(GlobalStats)
	if err := json.Unmarshal(sj, r.Stats); err != nil {
		return ErrMalformed
	}
	return nil
}

// EncodeShardResponse puts r's binary form in msg, zstd compressed above
// threshold bytes (0: never). msg.Data is a pooled buffer: give it back
// with Recycle once msg is sent.
func EncodeShardResponse(msg *nats.Msg, r *ShardResponse, threshold int) error {
	buf := getBuffer(64 + len(r.Hits)*128)
	b, err := AppendShardResponse(*buf, r)
	if err != nil {
		putBuffer(buf)
		return err
	}
	*buf = b
	if threshold > 0 && len(b) > threshold {
		z := getBuffer(len(b) / 3)
		*z = compress(*z, b)
		putBuffer(buf)
		buf = z
		flagCompressed(msg)
	}
	msg.Data = *buf
	return nil
}

// DecodeShardResponse decodes a message made by EncodeShardResponse.
// Nothing in r refers to msg's payload afterwards.
func DecodeShardResponse(msg *nats.Msg, r *ShardResponse) error {
	if !compressed(msg) {
		return UnmarshalShardResponse(msg.Data, r)
	}
	buf := getBuffer(0)
	defer putBuffer(buf)
	b, err := decompress(*buf, msg.Data)
	*buf = b[:0]
	if err != nil {
		return fmt.Errorf("shard response: %w", err)
	}
	return UnmarshalShardResponse(b, r) // copies what it keeps
}

// PeekReplica returns the replica id of a binary shard response, or "" if
// data is not one.
func PeekReplica(data []byte) string {
	if len(data) < 3 || data[0] != binMagic0 || data[1] != binMagic1 || (data[2] != binVersion && data[2] != binVersionMaps) {
		return ""
	}
	d := decoder{b: data[3:]}
	if _, err := d.uvarint(); err != nil { // total
		return ""
	}
	if _, err := d.float(); err != nil { // max score
		return ""
	}
	if _, n := binary.Varint(d.b); n <= 0 { // took
		return ""
	} else {
		d.b = d.b[n:]
	}
	if _, err := d.uvarint(); err != nil { // seq
		return ""
	}
	if _, err := d.uvarint(); err != nil { // generation
		return ""
	}
	r, _ := d.str()
	return r
}
