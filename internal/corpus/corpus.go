// Package corpus generates realistic text documents for tests and
// benchmarks that must not depend on Quarry's own sample catalogue: a large
// vocabulary of made-up words drawn with a Zipf distribution (as words in
// real text are), short titles and long bodies of very different lengths,
// and a share of words in other scripts (accents, Greek, Cyrillic, CJK,
// emoji, combining marks). Documents are deterministic for a seed.
package corpus

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Config shapes a corpus. Zero fields take the defaults noted.
type Config struct {
	Seed uint64
	// Vocabulary is the number of distinct words (default 30,000).
	Vocabulary int
	// TitleWords and BodyWords bound the words of each field
	// (default 2-12 and 5-400): body lengths vary a hundredfold, which
	// is what BM25's length normalisation is about.
	TitleMin, TitleMax int
	BodyMin, BodyMax   int
	// Foreign is the share of words written in other scripts (default
	// 0.05).
	Foreign float64
}

// Doc is one generated document.
type Doc struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Body  string  `json:"body"`
	Year  int     `json:"year"`
	Score float64 `json:"score"`
	Tag   string  `json:"tag"`
}

// Generator makes documents.
type Generator struct {
	cfg   Config
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
	n     int
}

var (
	onsets  = []string{"", "b", "br", "c", "ch", "d", "dr", "f", "g", "gl", "h", "j", "k", "l", "m", "n", "p", "pr", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z"}
	nuclei  = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"}
	codas   = []string{"", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x", "ck"}
	foreign = []string{"café", "naïve", "Größe", "façade", "Ελλάδα", "λόγος", "Москва", "книга", "東京", "検索", "数据", "서울", "😀", "🍜", "e\u0301cole", "İstanbul", "ﬁre", "Ǆemal", "ß", "ǅ"}
)

// New makes a generator.
func New(cfg Config) *Generator {
	if cfg.Vocabulary <= 0 {
		cfg.Vocabulary = 30000
	}
	if cfg.TitleMax <= 0 {
		cfg.TitleMin, cfg.TitleMax = 2, 12
	}
	if cfg.BodyMax <= 0 {
		cfg.BodyMin, cfg.BodyMax = 5, 400
	}
	if cfg.Foreign == 0 {
		cfg.Foreign = 0.05
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	g := &Generator{cfg: cfg, rng: rng, zipf: rand.NewZipf(rng, 1.07, 2, uint64(cfg.Vocabulary-1))}
	seen := map[string]bool{}
	for len(g.words) < cfg.Vocabulary {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(onsets[rng.IntN(len(onsets))])
			b.WriteString(nuclei[rng.IntN(len(nuclei))])
			b.WriteString(codas[rng.IntN(len(codas))])
		}
		w := b.String()
		if len(w) < 2 || seen[w] {
			continue
		}
		seen[w] = true
		g.words = append(g.words, w)
	}
	return g
}

// Words returns the vocabulary, most frequent first.
func (g *Generator) Words() []string { return g.words }

func (g *Generator) text(minWords, maxWords int) string {
	n := minWords + g.rng.IntN(maxWords-minWords+1)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		if g.rng.Float64() < g.cfg.Foreign {
			b.WriteString(foreign[g.rng.IntN(len(foreign))])
			continue
		}
		b.WriteString(g.words[g.zipf.Uint64()])
	}
	return b.String()
}

// Next returns the next document.
func (g *Generator) Next() Doc {
	g.n++
	return Doc{
		ID:    fmt.Sprintf("doc-%06d", g.n),
		Title: g.text(g.cfg.TitleMin, g.cfg.TitleMax),
		Body:  g.text(g.cfg.BodyMin, g.cfg.BodyMax),
		Year:  1900 + g.rng.IntN(125),
		Score: float64(g.rng.IntN(1000)) / 10,
		Tag:   g.words[g.rng.IntN(50)],
	}
}

// Records returns the next n documents as records (Doc.Record).
func (g *Generator) Records(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = g.Next().Record()
	}
	return out
}

// WriteNDJSON writes n documents, one JSON object a line.
func (g *Generator) WriteNDJSON(w io.Writer, n int) error {
	enc := json.NewEncoder(w)
	for range n {
		if err := enc.Encode(g.Next()); err != nil {
			return err
		}
	}
	return nil
}

// Record is d as a JSON object with two more fields derived from its id,
// so that tests can query every kind of field: date (a date-time in d's
// Year) and loc (a geopoint, {lat, lon}).
func (d Doc) Record() map[string]any {
	var h uint64 = 14695981039346656037
	for i := range len(d.ID) {
		h = (h ^ uint64(d.ID[i])) * 1099511628211
	}
	return map[string]any{
		"id": d.ID, "title": d.Title, "body": d.Body, "year": d.Year, "score": d.Score, "tag": d.Tag,
		"date": fmt.Sprintf("%04d-%02d-%02dT%02d:00:00Z", d.Year, 1+h%12, 1+(h>>8)%28, (h>>16)%24),
		"loc":  map[string]any{"lat": float64((h>>24)%1600)/10 - 80, "lon": float64((h>>40)%3600)/10 - 180},
	}
}

// Mapping is a bleve index mapping for Records, scored with scoring ("bm25"
// or "tf-idf"): title and body text (standard analyzer, with term vectors
// for phrases), tag a keyword, year a number, date a date-time, loc a
// geopoint, score stored only; every searched field in _all but loc.
func Mapping(scoring string) json.RawMessage {
	field := func(name, typ, analyzer string, all bool) string {
		a := ""
		if analyzer != "" {
			a = fmt.Sprintf(`, "analyzer": %q, "include_term_vectors": true`, analyzer)
		}
		index := name != "score" // stored, not searched: indexing it only costs
		return fmt.Sprintf(`%q: {"enabled": true, "dynamic": false, "fields": [{"name": %q, "type": %q%s, "store": true, "index": %v, "include_in_all": %v, "docvalues": %v}]}`,
			name, name, typ, a, index, all && index, index)
	}
	props := []string{
		field("id", "text", "keyword", false),
		field("title", "text", "standard", true),
		field("body", "text", "standard", true),
		field("tag", "text", "keyword", true),
		field("year", "number", "", true),
		field("score", "number", "", true),
		field("date", "datetime", "", true),
		field("loc", "geopoint", "", false),
	}
	return json.RawMessage(fmt.Sprintf(`{"scoring_model": %q, "default_mapping": {"enabled": true, "dynamic": true, "properties": {%s}}}`,
		scoring, strings.Join(props, ", ")))
}
