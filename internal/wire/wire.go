package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// ShardRequest asks one shard for its top K hits.
type ShardRequest struct {
	// Query is a bleve query in JSON form.
	Query json.RawMessage `json:"query"`
	// K is how many hits the shard returns: from+size of the user request.
	K      int                         `json:"k"`
	Sort   []string                    `json:"sort,omitempty"`
	Fields []string                    `json:"fields,omitempty"`
	Facets map[string]api.FacetRequest `json:"facets,omitempty"`
	// Phase "stats" asks only for the statistics of the query's terms
	// (a StatsResponse); "" runs the search.
	Phase string `json:"phase,omitempty"`
	// Stats, when set, are the index-wide statistics to score with.
	Stats *GlobalStats `json:"stats,omitempty"`
	// LocalStats, without Stats, asks the shard to count the query's
	// statistics itself before it searches, as the statistics phase
	// would: on an index of one shard they are the index's, and exact
	// scoring needs no round trip. (A searcher that predates it scores
	// with bleve's own statistics.)
	LocalStats bool `json:"local_stats,omitempty"`
	// MaxTerms bounds the terms the search reads, expansions included
	// (bleve's term-searcher limit); over it the shard answers
	// api.CodeQueryTooComplex. 0: no bound.
	MaxTerms int `json:"max_terms,omitempty"`
	// MaxStaleUpdates, with Stats, bounds how many of the shard's updates
	// (documents written or deleted after Stats.Seqs[shard]) the
	// statistics may miss; past it the shard answers CodeStaleStats
	// instead of searching. 0: no bound.
	MaxStaleUpdates int `json:"max_stale_updates,omitempty"`
	// StatsComposed says the broker put Stats together from the
	// statistics of earlier queries that read the same terms, not from a
	// statistics phase of this query: with MaxStaleUpdates set, a shard
	// whose search reads a term or a field they lack answers
	// CodeStaleStats, and the broker counts this query's statistics.
	StatsComposed bool `json:"stats_composed,omitempty"`
	// Explain asks for each hit's score explanation, sent back as the
	// hit's field ExplanationField (so the binary response needs no new
	// layout).
	Explain bool `json:"explain,omitempty"`
	// SearchAfter, with Sort, starts after these sort values (a
	// cursor's: bleve's encoded values, hence bytes), one a key of Sort.
	SearchAfter [][]byte `json:"search_after,omitempty"`
	// Highlight asks for each hit's fragments of the fields it names,
	// sent back as the hit's field HighlightField, an object of field
	// name to fragments (as explanations: no new layout).
	Highlight *api.HighlightRequest `json:"highlight,omitempty"`
	// MaxReplyBytes bounds the reply the search builds, estimated as its
	// hits are added: their ids and sort keys, their stored fields (names
	// and values) and their explanations. Past it the shard stops and
	// answers api.CodeResponseTooLarge instead of building what its reply
	// could not carry, or what the searcher's operator bounds it to. Not
	// sent: the searcher serving the request sets it (its
	// Config.MaxReplyBytes, at most what one reply carries on its
	// connection, ReplyRoom). 0: no bound.
	MaxReplyBytes int `json:"-"`
	// Suggest, when set, asks for the terms that complete a word beside
	// the search (api.SearchRequest.Suggest).
	Suggest *Suggest `json:"suggest,omitempty"`
	// PIT is the point in time the request reads (its id on the replica
	// the request is sent to: shard.Replica.OpenPIT), and PITKeepAliveMS
	// renews it for that long; "" reads the replica's documents now.
	// With Phase PhasePIT, PIT and PITKeepAliveMS are the new point in
	// time's id and keep-alive.
	PIT            string `json:"pit,omitempty"`
	PITKeepAliveMS int64  `json:"pit_keep_alive_ms,omitempty"`
	// DictionaryField is the field whose every term's statistics
	// Phase PhaseDictionary asks for.
	DictionaryField string `json:"dictionary_field,omitempty"`
}

// PhasePIT is ShardRequest.Phase that opens a point in time on the
// replica that takes the request; it answers a PITOpened.
const PhasePIT = "pit"

// PhasePITClose is ShardRequest.Phase that ends point in time PIT on the
// replica holding it; it answers an empty JSON object.
const PhasePITClose = "pit_close"

// PITOpened is a replica's answer to PhasePIT: the point in time's id
// there, the replica, and the stream sequence it holds.
type PITOpened struct {
	Replica string `json:"replica"`
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
}

// Suggest asks a shard for the terms of Field that complete Text, a q: its
// last word (api.SuggestWord) as Field's analyser makes it, or all of it,
// as typed, where the field keeps values whole; with its typos' terms
// when Typos; the Size with the most documents, reading at most Scan
// terms that start with it. The shard answers them as the facet
// SuggestFacet.
type Suggest struct {
	Field string `json:"field"`
	Text  string `json:"text"`
	Size  int    `json:"size"`
	Typos bool   `json:"typos,omitempty"`
	Scan  int    `json:"scan"`
}

// SuggestFacet is the facet name under which a shard returns a Suggest's
// terms and counts (so the binary response needs no new layout); the
// broker takes it out into api.SearchResponse.Suggestions.
const SuggestFacet = "_quarry_suggest"

// ExplanationField is the stored-field name under which a shard returns a
// hit's score explanation when ShardRequest.Explain asks for it; the
// broker takes it out into api.Hit.Explanation.
const ExplanationField = "_quarry_explanation"

// HighlightField is the stored-field name under which a shard returns a
// hit's highlighted fragments when ShardRequest.Highlight asks for them;
// the broker takes it out into api.Hit.Highlight.
const HighlightField = "_quarry_highlight"

// PhaseStats is ShardRequest.Phase for the statistics pre-search.
const PhaseStats = "stats"

// PhaseDictionary is ShardRequest.Phase that asks for the statistics of
// every term of field DictionaryField, as the statistics phase of a query
// reading them all would count them (a GlobalStats whose DocFreq holds
// the field's terms with live documents); over MaxTerms terms the shard
// answers api.CodeQueryTooComplex. The broker keeps small fields'
// dictionaries whole (broker/internal/fanout's dictionaries.go).
const PhaseDictionary = "dictionary"

// CodeStaleStats is a shard's answer to a search whose statistics miss
// more of its updates than ShardRequest.MaxStaleUpdates allows, or, put
// together (ShardRequest.StatsComposed), lack a term it reads: the broker
// fetches them again and asks once more. It never reaches a caller.
const CodeStaleStats api.Code = "stale_statistics"

// GlobalStats are the scoring statistics of a whole index, summed over its
// shards, for the terms of one query. Quarry's BM25 is a function of the
// documents alone (docs/RATIONALE.md, "Exact distributed scoring"): the
// live document count, each term's live document frequency, and per field
// the total number of tokens in live documents, whatever the shards and
// segments.
type GlobalStats struct {
	DocCount uint64 `json:"doc_count"`
	// FieldTokens is, per field, the total number of tokens (the sum of
	// every term's frequency) in live documents. A shard hands it to
	// bleve as search.BM25Stats.FieldCardinality (an int map, so without
	// a copy): bleve's average field length is then
	// ceil(FieldTokens / DocCount).
	FieldTokens map[string]int `json:"field_tokens"`
	// FieldCardinality is bleve's own field statistic (distinct terms
	// summed over segments), summed over the shards, for searchers that
	// predate FieldTokens: brokers and searchers of both kinds work
	// together during a rolling upgrade. Quarry's searchers ignore it.
	FieldCardinality map[string]int `json:"field_cardinality,omitempty"`
	// DocFreq is field → term → live documents holding it. Its terms with
	// a frequency above 0 are also the index's dictionary for the query:
	// a shard expands fuzzy, prefix, wildcard, regexp and range terms to
	// them, so every shard scores the same set of terms.
	DocFreq map[string]map[string]uint64 `json:"doc_freq"`
	// Local lists fields whose terms could not all be recorded (terms
	// that are not UTF-8, which JSON cannot carry: IP addresses): their
	// expansions stay each shard's own.
	Local []string `json:"local,omitempty"`
	// Truncated says a shard read more terms than it records (no
	// max_terms and a very wide expansion): no expansion is replaced.
	Truncated bool `json:"truncated,omitempty"`
	// Seqs is, per shard, the last stream sequence its replica had
	// applied when it counted: a shard asked to search with these
	// statistics knows how many of its updates they miss.
	Seqs map[int]uint64 `json:"seqs,omitempty"`
	// Generation is the newest snapshot generation the statistics came from.
	Generation uint64 `json:"generation,omitempty"`

	// noTokens: a shard sent no token totals (it predates them), so the
	// sums have none (shards then keep their own average lengths).
	noTokens bool
}

// Add sums other into s.
func (s *GlobalStats) Add(other *GlobalStats) {
	s.DocCount += other.DocCount
	s.Generation = max(s.Generation, other.Generation)
	s.Truncated = s.Truncated || other.Truncated
	for _, f := range other.Local {
		if !slices.Contains(s.Local, f) {
			s.Local = append(s.Local, f)
		}
	}
	if len(other.Seqs) > 0 && s.Seqs == nil {
		s.Seqs = make(map[int]uint64, len(other.Seqs))
	}
	for sh, seq := range other.Seqs {
		s.Seqs[sh] = seq
	}
	if other.FieldTokens == nil && len(other.DocFreq) > 0 {
		s.noTokens = true
	}
	if s.noTokens {
		s.FieldTokens = nil
	} else {
		if s.FieldTokens == nil {
			s.FieldTokens = map[string]int{}
		}
		for f, n := range other.FieldTokens {
			s.FieldTokens[f] += n
		}
	}
	if len(other.FieldCardinality) > 0 && s.FieldCardinality == nil {
		s.FieldCardinality = make(map[string]int, len(other.FieldCardinality))
	}
	for f, n := range other.FieldCardinality {
		s.FieldCardinality[f] += n
	}
	if s.DocFreq == nil {
		s.DocFreq = map[string]map[string]uint64{}
	}
	for f, terms := range other.DocFreq {
		m := s.DocFreq[f]
		if m == nil {
			m = make(map[string]uint64, len(terms))
			s.DocFreq[f] = m
		}
		for t, n := range terms {
			m[t] += n
		}
	}
}

// ShardResponse is one shard's answer.
type ShardResponse struct {
	Hits     []api.Hit `json:"hits"`
	Total    uint64    `json:"total"`
	MaxScore float64   `json:"max_score"`
	// Facets are the shard's term counts, each cut to its request's size
	// (the rest counted in Other), by name; the broker merges them.
	Facets map[string]api.FacetResult `json:"facets,omitempty"`
	TookNS int64                      `json:"took_ns"`
	// Seq is the last stream sequence the replica had applied.
	Seq uint64 `json:"seq"`
	// Generation is the snapshot generation the replica was opened from.
	Generation uint64 `json:"generation"`
	// Replica identifies the searcher process that answered; the broker
	// routes hedges to another one (see subject.Replica).
	Replica string `json:"replica,omitempty"`
	// QueueNS is how long the request waited for a worker.
	QueueNS int64 `json:"queue_ns,omitempty"`
	// Stats are the statistics the shard counted and scored with when
	// the request asked it to (ShardRequest.LocalStats): the broker
	// caches them as a statistics phase's.
	Stats *GlobalStats `json:"stats,omitempty"`
}

// CompressThreshold is the default payload size above which messages are
// zstd compressed. BenchmarkShardResponseCodec: compressing a 15 KB shard
// response (100 hits) costs ~70 µs and saves ~14 KB, ~110 µs at 1 Gbit/s;
// under ~16 KB the time spent outweighs the transfer saved. In-process
// (quarry serve) compression never pays: searchers and brokers take the
// threshold as a setting.
const CompressThreshold = 16 << 10

// ReplyRoom is the most a reply's body may carry on nc: the server's
// max_payload (8 MiB on the embedded server, 1 MiB on a stock
// nats-server), less 4 KiB for its headers. A larger reply cannot be
// sent: searchers and brokers refuse it with api.CodeResponseTooLarge
// rather than leave the requester waiting to its deadline.
func ReplyRoom(nc *nats.Conn) int {
	return max(0, int(nc.MaxPayload())-replyHeaderRoom)
}

// replyHeaderRoom is what ReplyRoom leaves for a reply's headers.
const replyHeaderRoom = 4 << 10

var (
	encOnce sync.Once
	zenc    *zstd.Encoder
	zdec    *zstd.Decoder
)

func codecs() (*zstd.Encoder, *zstd.Decoder) {
	encOnce.Do(func() {
		var err error
		zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err)
		}
		zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			panic(err)
		}
	})
	return zenc, zdec
}

// Encode marshals v to JSON into a message, compressing it with zstd and
// flagging it in a header when it is over threshold bytes.
func Encode(msg *nats.Msg, v any, threshold int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	setData(msg, b, threshold)
	return nil
}

// setData puts b in msg, zstd compressed and flagged in a header when it
// is over threshold bytes (0: never).
func setData(msg *nats.Msg, b []byte, threshold int) {
	if threshold > 0 && len(b) > threshold {
		b = compress(make([]byte, 0, len(b)/3), b)
		flagCompressed(msg)
	}
	msg.Data = b
}

// compress appends b, zstd compressed, to dst.
func compress(dst, b []byte) []byte {
	enc, _ := codecs()
	return enc.EncodeAll(b, dst)
}

// decompress appends b, decompressed, to dst.
func decompress(dst, b []byte) ([]byte, error) {
	_, dec := codecs()
	out, err := dec.DecodeAll(b, dst)
	if err != nil {
		return out, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}

// flagCompressed marks msg's payload as zstd compressed.
func flagCompressed(msg *nats.Msg) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(subject.HeaderEncoding, "zstd")
}

// compressed reports whether msg's payload is zstd compressed.
func compressed(msg *nats.Msg) bool {
	return msg.Header.Get(subject.HeaderEncoding) == "zstd"
}

// data returns msg's payload, decompressed if its header says so.
func data(msg *nats.Msg) ([]byte, error) {
	if !compressed(msg) {
		return msg.Data, nil
	}
	return decompress(nil, msg.Data)
}

// Decode unmarshals a message made by Encode into v.
func Decode(msg *nats.Msg, v any) error {
	b, err := data(msg)
	if err != nil {
		return fmt.Errorf("%T: %w", v, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// globalStatsFields is GlobalStats without its JSON methods.
type globalStatsFields GlobalStats

// globalStatsJSON is GlobalStats as JSON: terms that are not UTF-8
// (bleve's to_lower makes them from words with İ or ẞ; an IP address
// field's terms are bytes), which a JSON key cannot carry, travel in
// DocFreqBytes, base64-encoded, instead of DocFreq.
type globalStatsJSON struct {
	*globalStatsFields
	DocFreqBytes map[string]map[string]uint64 `json:"doc_freq_bytes,omitempty"`
}

// MarshalJSON writes s, its terms that are not UTF-8 base64-encoded in
// doc_freq_bytes.
func (s GlobalStats) MarshalJSON() ([]byte, error) {
	out := globalStatsJSON{globalStatsFields: (*globalStatsFields)(&s)}
	for field, terms := range s.DocFreq {
		for t, n := range terms {
			if utf8.ValidString(t) {
				continue
			}
			if out.DocFreqBytes == nil {
				// Copy before taking terms out: s shares its maps.
				out.DocFreqBytes = map[string]map[string]uint64{}
				out.DocFreq = maps.Clone(s.DocFreq)
			}
			if out.DocFreqBytes[field] == nil {
				out.DocFreqBytes[field] = map[string]uint64{}
				out.DocFreq[field] = maps.Clone(terms)
			}
			out.DocFreqBytes[field][base64.StdEncoding.EncodeToString([]byte(t))] = n
			delete(out.DocFreq[field], t)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads s, with the terms of doc_freq_bytes back in
// DocFreq.
func (s *GlobalStats) UnmarshalJSON(b []byte) error {
	in := globalStatsJSON{globalStatsFields: (*globalStatsFields)(s)}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	for field, terms := range in.DocFreqBytes {
		for enc, n := range terms {
			t, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return fmt.Errorf("statistics: term %q of field %q is not base64", enc, field)
			}
			if s.DocFreq == nil {
				s.DocFreq = map[string]map[string]uint64{}
			}
			if s.DocFreq[field] == nil {
				s.DocFreq[field] = map[string]uint64{}
			}
			s.DocFreq[field][string(t)] = n
		}
	}
	return nil
}
