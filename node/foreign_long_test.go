//go:build long

package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// A corpus Quarry was not written for: a few thousand documents of several
// KB each, a vocabulary of tens of thousands of words in many scripts (CJK
// without spaces, Arabic and Hebrew, Hangul, Katakana, Cyrillic, Greek),
// emoji with ZWJ sequences and skin tones, the same words in NFC and NFD,
// Turkish dotted and dotless i, German ß and ẞ, full-width Latin, letters
// whose lower case is longer in UTF-8, invisible format characters, tokens
// of up to 20,000 bytes, and ids with spaces, slashes, dots, percent and
// plus signs, NATS wildcards and every script. All of it valid UTF-8, made
// from a seed.

// foreignDoc is one generated document.
type foreignDoc struct {
	id    string
	line  []byte // the NDJSON line as written, without its newline
	title string
}

// foreignRare is a word only a few documents hold, the text that searches
// it (the form written, or another that analyses to the same token), and
// the documents that hold it.
type foreignRare struct {
	what    string
	q       string
	query   json.RawMessage // a term query in place of q (a word over max_q_bytes)
	holders []string
	// lowerBug: q or a holder's word meets bleve's own lower-case bug
	// (Quarry's mappings replace that filter)
	// (lowerBroken)
	lowerBug bool
}

type foreignCorpus struct {
	docs     []foreignDoc
	rare     []foreignRare
	common   []string // the most frequent vocabulary words
	odd      []string // odd-script words and emoji, each in some document
	distinct int      // distinct vocabulary words in the documents
}

type foreignAlphabet struct {
	name    string
	letters []rune
}

func runeRange(lo, hi rune) []rune {
	var rs []rune
	for r := lo; r <= hi; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Every letter below is a word letter for Unicode word segmentation
// (ALetter, Hebrew_Letter or Katakana), so a word of them is one token.
var foreignAlphabets = []foreignAlphabet{
	{"latin", []rune("abcdefghijklmnopqrstuvwxyzéèêëàâäôöûüçñøåæœ")},
	{"cyrillic", []rune("абвгдежзийклмнопрстуфхцчшщъыьэюя")},
	{"greek", []rune("αβγδεζηθικλμνξοπρτυφχψω")}, // no σ: a final Σ lower-cases to ς
	{"arabic", []rune("ابتثجحخدذرزسشصضطظعغفقكلمنهوي")},
	{"hebrew", []rune("אבגדהוזחטיכלמנסעפצקרשת")},
	{"hangul", runeRange(0xAC00, 0xAC00+399)},
	{"katakana", runeRange(0x30A2, 0x30F3)},
}

var asciiLetters = []rune("abcdefghijklmnopqrstuvwxyz")

// nfdOf spells the precomposed letters of the latin alphabet as a base
// letter and combining marks (their canonical decomposition).
var nfdOf = map[rune]string{
	'é': "e\u0301", 'è': "e\u0300", 'ê': "e\u0302", 'ë': "e\u0308",
	'à': "a\u0300", 'â': "a\u0302", 'ä': "a\u0308", 'ô': "o\u0302",
	'ö': "o\u0308", 'û': "u\u0302", 'ü': "u\u0308", 'ç': "c\u0327",
	'ñ': "n\u0303", 'å': "a\u030a",
}

func nfd(s string) string {
	var b strings.Builder
	for _, r := range s {
		if d, ok := nfdOf[r]; ok {
			b.WriteString(d)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// foreignSpell writes i in an alphabet's letters, at least 3 of them.
func foreignSpell(letters []rune, i int) string {
	var rs []rune
	for len(rs) < 3 || i > 0 {
		rs = append(rs, letters[i%len(letters)])
		i /= len(letters)
	}
	return string(rs)
}

// fullWidth spells ASCII letters in their full-width forms.
func fullWidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			r += 0xFF41 - 'a'
		case r >= 'A' && r <= 'Z':
			r += 0xFF21 - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Text other than vocabulary: emoji (ZWJ sequences, skin tones, flags,
// keycaps), CJK and Thai without spaces, Arabic and Hebrew phrases, the
// same words in NFC and NFD, Turkish, German, full-width Latin, letters
// whose lower case is longer.
var foreignOdd = []string{
	"👩‍💻", "👨‍👩‍👧‍👦", "👍🏽", "👋🏿", "🧑🏻‍🚀", "🏳️‍🌈", "❤️‍🔥", "🇩🇪", "🇯🇵", "1️⃣", "🤷🏼‍♀️",
	"検索エンジンの分散索引", "数据库系统的查询优化器", "東京都渋谷区神南一丁目", "한국어검색엔진", "ภาษาไทยไม่มีช่องว่าง",
	"مرحبا بالعالم", "שלום עולם", "العربية", "עברית",
	"café", "cafe\u0301", "naïve", "nai\u0308ve", "Ångström", "A\u030angstro\u0308m",
	"İstanbul", "ıslak", "DİYARBAKIR", "ılık", "Straße", "STRASSE", "GROẞ", "Fußball",
	"Ｑｕａｒｒｙ", "ＳＥＡＲＣＨ１２３", "ȺȾ", "Ⱥpple",
}

// Format characters and odd spaces sprinkled in the text.
var foreignInvisible = []string{"\u200f", "\u200e", "\ufeff", "\u200b", "\u00a0", "\u2028", "\t", "\r\n", "\u3000", "\u200d", "\x00"}

// foreignID: spaces, slashes, dots, percent and plus signs, NATS wildcards
// and separators, query and fragment characters, every script.
func foreignID(i int) string {
	forms := []string{
		"doc %05d", "path/to/%d", "50%%off-%d", "a+b=%d", "ñandú-%d", "文档%d", "מסמך-%d", "وثيقة-%d",
		"👩🏽‍💻-%d", "%d/../x", "x//%d", "./%d", "%d/.", "?q=%d#frag", "%d;param", "tab\t%d", `C:\dir\%d`,
		"%%2F%d", "+%d+", "  spaced %d  ", "*.>.%d", "quarry.v1.docs.%d", "İı-%d", "cafe\u0301-%d", "%d%%",
	}
	return fmt.Sprintf(forms[i%len(forms)], i)
}

// foreignSpecialIDs are ids no pattern makes: the dot segments, lone
// wildcards and signs, 512 bytes of 4-byte characters.
var foreignSpecialIDs = []string{".", "..", "*", ">", "%", "+", " ", "/", strings.Repeat("𝔮", 128)}

// generateForeign makes n documents (n ≥ 700) from seed, their bodies
// from 1 to 4 times kb KB long.
func generateForeign(seed uint64, n, kb int) *foreignCorpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fc := &foreignCorpus{}

	// Words held by one document, or a few: written into the bodies at
	// random places. The vocabulary (at most 10 letters a word) avoids
	// them; each has 9 letters or more, the special ones 11 or more.
	extra := make([][]string, n)
	taken := map[string]bool{}
	add := func(what, q string, written map[int]string) {
		r := foreignRare{what: what, q: q, lowerBug: lowerBroken(q)}
		for i, w := range written {
			r.lowerBug = r.lowerBug || lowerBroken(w)
			extra[i] = append(extra[i], w)
			taken[strings.ToLower(w)] = true
		}
		for i := range written {
			r.holders = append(r.holders, foreignIDOf(i))
		}
		slices.Sort(r.holders)
		fc.rare = append(fc.rare, r)
	}
	for i := range n {
		a := foreignAlphabets[i%len(foreignAlphabets)]
		w := foreignSpell(a.letters[3:], 7) + foreignSpell(a.letters, i) + string(a.letters[:3])
		if i%3 == 1 && a.name != "greek" {
			// Written in upper case, found by its lower case too.
			add(a.name+" upper", strings.ToUpper(w), map[int]string{i: strings.ToUpper(w)})
			add(a.name+" upper, searched lower", w, nil)
			fc.rare[len(fc.rare)-1].holders = []string{foreignIDOf(i)}
			continue
		}
		add(a.name, w, map[int]string{i: w})
	}
	for k := range 20 {
		s := foreignSpell(foreignAlphabets[0].letters, k)
		// The same word in NFC and in NFD: one term once the index folds
		// it (NFKC), so either spelling finds both documents.
		w := "crème" + s + "brûlée"
		add("NFC", w, map[int]string{100 + 7*k: w, 101 + 7*k: nfd(w)})
		add("NFD", nfd(w), nil)
		fc.rare[len(fc.rare)-1].holders = fc.rare[len(fc.rare)-2].holders
		// One word in three documents.
		w = "dreimal" + s + "geschrieben"
		add("three holders", w, map[int]string{300 + 5*k: w, 302 + 5*k: w, 600 + k: w})
	}
	for k := range 10 {
		s := foreignSpell(asciiLetters, k) + "lakdere"
		// Dotless ı is its own letter; I, İ and i lower-case to i.
		add("dotless ı", "ı"+s, map[int]string{400 + k: "ı" + s})
		add("dotted İ and I", "i"+s, map[int]string{410 + k: "I" + s, 420 + k: "İ" + s})
		add("dotted İ, searched İ", "İ"+s, nil)
		fc.rare[len(fc.rare)-1].holders = slices.Sorted(slices.Values([]string{foreignIDOf(410 + k), foreignIDOf(420 + k)}))
		fc.rare[len(fc.rare)-1].lowerBug = true
		// Two words that differ in their last letter only.
		add("İ…q", "İ"+s+"q", map[int]string{470 + k: "İ" + s + "q"})
		add("İ…z", "İ"+s+"z", map[int]string{480 + k: "İ" + s + "z"})
		// ẞ before a lower-case letter.
		add("ẞ then lower case", "maße"+s, map[int]string{490 + k: "MAẞe" + s})
		// ẞ lower-cases to ß; SS stays ss.
		add("capital ẞ", "groß"+s, map[int]string{430 + k: "GROẞ" + strings.ToUpper(s)})
		add("SS", "STRASSE"+s, map[int]string{440 + k: "strasse" + s})
		// Full-width Latin, written in lower case, searched in upper.
		add("full-width", fullWidth("QUARRY"+strings.ToUpper(s)), map[int]string{450 + k: fullWidth("quarry" + s)})
		// Ⱥ and Ⱦ lower-case to 3-byte letters.
		add("Ⱥ…Ⱦ", "Ⱥ"+s+"Ⱦ", map[int]string{460 + k: "Ⱥ" + s + "Ⱦ"})
		add("Ⱥ…Ⱦ searched lower", "ⱥ"+s+"ⱦ", nil)
		fc.rare[len(fc.rare)-1].holders = []string{foreignIDOf(460 + k)}
	}
	// Long tokens: 300 to 20,000 bytes, Latin and Hangul.
	for k, size := range []int{300, 1000, 3000, 20000} {
		var b strings.Builder
		b.WriteString("long" + foreignSpell(asciiLetters, k))
		for b.Len() < size {
			b.WriteRune(asciiLetters[rng.IntN(26)])
		}
		w := b.String()
		r := foreignRare{what: fmt.Sprintf("%d-byte token", size), holders: []string{foreignIDOf(500 + k)}}
		if size > 4000 {
			r.query, _ = json.Marshal(map[string]string{"term": w, "field": "body"})
		} else {
			r.q = w
		}
		extra[500+k] = append(extra[500+k], w)
		fc.rare = append(fc.rare, r)
		b.Reset()
		for b.Len() < 3000 {
			b.WriteRune(foreignAlphabets[5].letters[rng.IntN(400)])
		}
		add("3000-byte Hangul token", b.String(), map[int]string{510 + k: b.String()})
	}

	vocab := make([]string, 0, 40000)
	for len(vocab) < cap(vocab) {
		a := foreignAlphabets[rng.IntN(len(foreignAlphabets))]
		if rng.IntN(2) == 0 {
			a = foreignAlphabets[0] // half the words are Latin
		}
		rs := make([]rune, 2+rng.IntN(9))
		for j := range rs {
			rs[j] = a.letters[rng.IntN(len(a.letters))]
		}
		if w := string(rs); !taken[w] {
			taken[w] = true
			vocab = append(vocab, w)
		}
	}
	fc.common = vocab[:40]
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))

	distinct := map[string]bool{}
	oddUsed := map[string]bool{}
	for i := range n {
		d := foreignDoc{id: foreignIDOf(i)}
		var body strings.Builder
		target := kb*1024 + rng.IntN(3*kb*1024)
		at := make([]int, len(extra[i]))
		for j := range at {
			at[j] = rng.IntN(target)
		}
		slices.Sort(at)
		for body.Len() < target || len(at) > 0 {
			if len(at) > 0 && body.Len() >= at[0] {
				body.WriteString(extra[i][len(extra[i])-len(at)] + " ")
				at = at[1:]
				continue
			}
			switch x := rng.IntN(100); {
			case x < 3:
				o := foreignOdd[rng.IntN(len(foreignOdd))]
				oddUsed[o] = true
				body.WriteString(o)
			case x < 5:
				body.WriteString(foreignInvisible[rng.IntN(len(foreignInvisible))])
			default:
				w := vocab[zipf.Uint64()]
				distinct[w] = true
				body.WriteString(w)
			}
			if rng.IntN(12) == 0 {
				body.WriteString([]string{". ", ", ", "; ", "! ", "? ", "، ", "。", " — "}[rng.IntN(8)])
			} else {
				body.WriteByte(' ')
			}
		}
		var title []string
		for range 3 + rng.IntN(6) {
			if rng.IntN(4) == 0 {
				title = append(title, foreignOdd[rng.IntN(len(foreignOdd))])
			} else {
				title = append(title, vocab[zipf.Uint64()])
			}
		}
		d.title = strings.Join(title, " ")
		line, err := json.Marshal(map[string]any{
			"id": d.id, "title": d.title, "body": body.String(), "n": i,
			"tags": []string{vocab[rng.IntN(len(vocab))], foreignOdd[rng.IntN(len(foreignOdd))], d.id},
		})
		if err != nil {
			panic(err)
		}
		d.line = line
		fc.docs = append(fc.docs, d)
	}
	fc.distinct = len(distinct)
	for _, o := range foreignOdd {
		if oddUsed[o] {
			fc.odd = append(fc.odd, o)
		}
	}
	return fc
}

func foreignIDOf(i int) string {
	if i < len(foreignSpecialIDs) {
		return foreignSpecialIDs[i]
	}
	return foreignID(i)
}

// standardAnalyzer is bleve's "standard" analyzer: Quarry's default
// mapping analyses text with it.
var standardAnalyzer = func() analysis.Analyzer {
	a, err := registry.NewCache().AnalyzerNamed(standard.Name)
	if err != nil {
		panic(err)
	}
	return a
}()

// lowerBroken says whether bleve's lower-case filter breaks a token of s.
// bleve v2.6.3's to_lower (analysis/token/lowercase, toLowerDeferredCopy)
// lower-cases in place, and after a letter whose lower case is shorter in
// UTF-8 (İ U+0130 → i, ẞ U+1E9E → ß, the Kelvin sign U+212A → k) it no
// longer moves the letters that need no change: "İstanbul" becomes
// "i\xb0stanbu" (invalid UTF-8, its last letter lost), so "İstanbul" and
// "Istanbul" are different tokens and "İstanbul" and "İstanbux" the same.
func lowerBroken(s string) bool {
	for _, tok := range standardAnalyzer.Analyze([]byte(s)) {
		if !utf8.Valid(tok.Term) {
			return true
		}
	}
	return false
}

// foreignHTTP sends one request to the node's HTTP API; safe in any
// goroutine (an error, never t.Fatal).
func foreignHTTP(n *Node, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://"+n.HTTPAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	setBodyType(req, string(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// foreignSearch posts req to index's search over HTTP, with a 10 s
// deadline; a refusal for load (429, or 504 on a machine so slow that a
// shard misses the deadline: the race detector on two shared cores) is
// tried again, up to 5 times, and counted in retries.
func foreignSearch(n *Node, index string, req map[string]any, retries *atomic.Int64) (api.SearchResponse, error) {
	var resp api.SearchResponse
	req = maps.Clone(req)
	req["timeout_ms"] = 10000
	b, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	for try := 0; ; try++ {
		code, body, err := foreignHTTP(n, "POST", "/v1/indexes/"+index+"/search", b)
		if err != nil {
			return resp, err
		}
		if (code == 429 || code == 504) && try < 5 {
			retries.Add(1)
			var e struct {
				Error struct {
					RetryAfterMS int `json:"retry_after_ms"`
				}
			}
			json.Unmarshal(body, &e)
			// A client's retry: after the wait the server asked for.
			time.Sleep(time.Duration(max(e.Error.RetryAfterMS, 100)) * time.Millisecond)
			continue
		}
		if code != 200 {
			return resp, fmt.Errorf("%d %.300s", code, body)
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return resp, fmt.Errorf("%v in %.300s", err, body)
		}
		if resp.Shards.Failed != 0 {
			return resp, fmt.Errorf("%d shards failed: %.300s", resp.Shards.Failed, body)
		}
		return resp, nil
	}
}

// foreignParallel runs f(0..n-1) on 4 goroutines.
func foreignParallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// httpReachable says whether an id can be named in an HTTP path: the API
// refuses paths with an encoded slash, backslash, dot or NUL and dot
// segments (httpapi.Strict, docs/api.md), so an id with a slash or a
// backslash, or "." or "..", is read and deleted through the Go client or
// the CLI only.
func httpReachable(id string) bool {
	return id != "." && id != ".." && !strings.ContainsAny(id, "/\\\x00")
}

// TestForeignCorpus indexes the foreign corpus over HTTP into a 1-shard
// and a 3-shard index and checks that every id reads back exactly, that a
// rare word finds exactly the documents holding it (with their ids and
// stored titles as written), that both indexes answer the same ids, order
// and scores, and that no odd-script search fails.
//
// bleve's own lower-case filter breaks tokens with İ, ẞ or the Kelvin
// sign (lowerBroken); the indexes' mappings, made by Quarry, lower-case
// with Quarry's filter (indexmap.LowerCaseType), so those words find
// exactly their documents too.
func TestForeignCorpus(t *testing.T) {
	start := time.Now()
	since := func() time.Duration { return time.Since(start).Round(time.Millisecond) }
	size, kb := 2000, 2 // bodies of 2-8 KB
	if raceEnabled {
		// Under the race detector indexing is several times slower.
		size, kb = 700, 1
	}
	fc := generateForeign(7, size, kb)
	var ndjson bytes.Buffer
	for _, d := range fc.docs {
		ndjson.Write(d.line)
		ndjson.WriteByte('\n')
	}
	t.Logf("%d documents, %.1f MB, %d distinct vocabulary words, %d rare words, generated in %v",
		len(fc.docs), float64(ndjson.Len())/1e6, fc.distinct, len(fc.rare), since())
	if want := min(20000, size*10); fc.distinct < want {
		t.Fatalf("only %d distinct vocabulary words, want %d", fc.distinct, want)
	}

	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	indexes := []string{"foreign1", "foreign3"}
	for i, shards := range []int{1, 3} {
		code, body := httpDo(t, n, "POST", "/v1/indexes/"+indexes[i], fmt.Sprintf(`{"shards":%d}`, shards))
		if code != 201 {
			t.Fatalf("create %s: %d %s", indexes[i], code, body)
		}
		code, body = httpDo(t, n, "POST", "/v1/indexes/"+indexes[i]+"/documents", ndjson.String())
		var res struct{ Lines, Stored, Failed int }
		json.Unmarshal(body, &res)
		if code != 200 || res.Stored != size || res.Failed != 0 {
			t.Fatalf("ingest into %s: %d %s", indexes[i], code, body)
		}
	}
	waitDocs(t, n, uint64(2*size))
	t.Logf("indexed twice by %v", since())

	// Every id reads back: the document exactly as written, over HTTP
	// (by its path, or, for an id no path segment can carry, by ?id=)
	// and through the Go client.
	ctx := context.Background()
	c := n.Client()
	var unreachable atomic.Int64
	foreignParallel(len(fc.docs), func(i int) {
		d := fc.docs[i]
		path := "/v1/indexes/foreign3/documents/" + url.PathEscape(d.id)
		code, body, err := foreignHTTP(n, "GET", path, nil)
		switch {
		case err != nil:
			t.Errorf("GET %s: %v", path, err)
		case !httpReachable(d.id):
			if code != 400 || !bytes.Contains(body, []byte("with ?id=")) {
				t.Errorf("GET %s (id %q): %d %.200s, want 400 naming ?id=", path, d.id, code, body)
			}
			unreachable.Add(1)
			// The query form names it.
			qpath := "/v1/indexes/foreign3/documents?id=" + url.QueryEscape(d.id)
			if code, body, err := foreignHTTP(n, "GET", qpath, nil); err != nil || code != 200 || !bytes.Equal(body, d.line) {
				t.Errorf("GET %s (id %q): %d %.200s %v, want the document as written", qpath, d.id, code, body, err)
			}
		case code != 200 || !bytes.Equal(body, d.line):
			t.Errorf("GET %s (id %q): %d %.200s, want the document as written", path, d.id, code, body)
		}
		got, err := c.Get(ctx, "foreign1", d.id)
		if err != nil || !bytes.Equal(got.Source, d.line) {
			t.Errorf("client.Get(%q): %v, want the document as written", d.id, err)
		}
	})
	t.Logf("%d ids read back by %v (%d of them over HTTP by ?id= only)", len(fc.docs), since(), unreachable.Load())

	titles := map[string]string{}
	for _, d := range fc.docs {
		titles[d.id] = d.title
	}

	// A rare word finds exactly the documents holding it, with their ids
	// and stored titles as written: every rare word in the 3-shard index,
	// every 7th and every special one in the 1-shard index.
	var retries atomic.Int64 // searches refused for load and tried again
	foreignParallel(len(fc.rare), func(i int) {
		r := fc.rare[i]
		req := map[string]any{"size": 10, "fields": []string{"title"}, "allow_partial": false}
		if r.query != nil {
			req["query"] = r.query
		} else {
			req["q"] = r.q
		}
		for _, index := range indexes {
			if index == "foreign1" && i%7 != 0 && i < size {
				continue
			}
			resp, err := foreignSearch(n, index, req, &retries)
			if err != nil {
				t.Errorf("%s: %s word %.80q: %v", index, r.what, r.q, err)
				continue
			}
			var ids []string
			for _, h := range resp.Hits {
				ids = append(ids, h.ID)
				if got, _ := h.Fields["title"].(string); got != titles[h.ID] {
					t.Errorf("%s: hit %q: stored title %q, want %q", index, h.ID, got, titles[h.ID])
				}
			}
			slices.Sort(ids)
			if int(resp.Total) == len(r.holders) && slices.Equal(ids, r.holders) {
				continue
			}
			t.Errorf("%s: %s word %.80q (bleve's own to_lower breaks it: %v): total %d, ids %q; want %q", index, r.what, r.q, r.lowerBug, resp.Total, ids, r.holders)
		}
	})
	t.Logf("%d rare words searched by %v", len(fc.rare), since())

	// The same ids, order and scores from 1 shard and 3, and no odd-script
	// search fails.
	var queries []string
	queries = append(queries, fc.common...)
	for i := 0; i+1 < len(fc.common); i += 4 {
		queries = append(queries, fc.common[i]+" "+fc.common[i+1])
	}
	for i, o := range fc.odd {
		queries = append(queries, o, o+" "+fc.common[i%len(fc.common)], "\u200f"+o+"\u200e")
	}
	queries = append(queries, "👩‍💻 👍🏽 🇩🇪", "検索 数据库 東京", "café cafe\u0301 naïve nai\u0308ve", "İstanbul ıslak istanbul ISLAK")
	for _, r := range fc.rare[:60] {
		queries = append(queries, r.q)
	}
	reqs := make([]map[string]any, 0, len(queries)+10)
	for _, q := range queries {
		reqs = append(reqs, map[string]any{"q": q, "size": 30})
	}
	// Pages, sorts, facets, and term-level queries on odd scripts.
	all := json.RawMessage(`{"match_all":{}}`)
	field := func(kind, text string, more ...any) json.RawMessage {
		m := map[string]any{kind: text, "field": "body"}
		for k := 0; k+1 < len(more); k += 2 {
			m[more[k].(string)] = more[k+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	reqs = append(reqs,
		map[string]any{"q": fc.common[0], "from": 200, "size": 50},
		map[string]any{"q": fc.common[1] + " " + fc.common[2], "sort": []string{"_id"}, "from": 50, "size": 100},
		map[string]any{"query": all, "sort": []string{"-n"}, "from": 100, "size": 50},
		map[string]any{"query": all, "sort": []string{"title", "_id"}, "size": 50},
		map[string]any{"query": all, "size": 0, "facets": map[string]any{
			"tags": map[string]any{"field": "tags", "size": 40}, "title": map[string]any{"field": "title", "size": 40}}},
		map[string]any{"query": field("match_phrase", "数据库系统的查询优化器")},
		map[string]any{"query": field("match_phrase", "مرحبا بالعالم")},
		map[string]any{"query": field("prefix", "ка")},
		map[string]any{"query": field("prefix", "שׁ")},
		map[string]any{"query": field("term", "straße", "fuzziness", 1)},
		map[string]any{"query": field("term", "한국어검색엔진", "fuzziness", 2)},
		map[string]any{"query": field("wildcard", "caf*")},
	)
	var compared, brokenTerms atomic.Int64
	foreignParallel(len(reqs), func(i int) {
		req := reqs[i]
		req["allow_partial"] = false
		what, _ := json.Marshal(req)
		var resps [2]api.SearchResponse
		for j, index := range indexes {
			resp, err := foreignSearch(n, index, req, &retries)
			if err != nil {
				t.Errorf("%s: search %.200s: %v", index, what, err)
				return
			}
			resps[j] = resp
		}
		if q, _ := req["q"].(string); lowerBroken(q) {
			// bleve's lower-casing makes an invalid UTF-8 term of it: the
			// statistics carry it base64-encoded (wire.GlobalStats), so it
			// scores as any other term.
			brokenTerms.Add(1)
		}
		compared.Add(1)
		one, three := resps[0], resps[1]
		if one.Total != three.Total || len(one.Hits) != len(three.Hits) {
			t.Errorf("search %.200s: 1 shard: total %d, %d hits; 3 shards: total %d, %d hits", what, one.Total, len(one.Hits), three.Total, len(three.Hits))
			return
		}
		// Sorted by fields only, a search has no statistics phase and its
		// scores are each shard's own (docs/api.md): ids, order and sort
		// values must agree, scores need not.
		sorted, _ := req["sort"].([]string)
		scored := len(sorted) == 0 || slices.Contains(sorted, "_score") || slices.Contains(sorted, "-_score")
		same := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
		for k := range one.Hits {
			a, b := one.Hits[k], three.Hits[k]
			// Hits whose scores differ in the last bits only (sums in
			// another order) are a tie and may come in either order.
			tie := a.ID != b.ID && scored && same(a.Score, b.Score) && slices.ContainsFunc(one.Hits, func(h api.Hit) bool { return h.ID == b.ID && same(h.Score, b.Score) })
			if a.ID != b.ID && !tie || scored && !same(a.Score, b.Score) || !reflect.DeepEqual(a.Sort, b.Sort) {
				t.Errorf("search %.200s: hit %d: 1 shard %q %.17g %v, 3 shards %q %.17g %v", what, k, a.ID, a.Score, a.Sort, b.ID, b.Score, b.Sort)
				return
			}
		}
		// Facets: the same fields, totals and missing counts. A term's
		// count may be lower at 3 shards (a shard counts its own top
		// size × 1.5 + 10 terms, broker shardFacets: a term outside them
		// is not counted there), which is logged; none may be higher.
		for name, f1 := range one.Facets {
			f3, ok := three.Facets[name]
			if !ok || f1.Field != f3.Field || f1.Total != f3.Total || f1.Missing != f3.Missing {
				t.Errorf("search %.200s: facet %s: 1 shard %+v, 3 shards %+v", what, name, f1, f3)
				continue
			}
			exact := map[string]int{}
			for _, tc := range f1.Terms {
				exact[tc.Term] = tc.Count
			}
			low := 0
			for _, tc := range f3.Terms {
				if c, ok := exact[tc.Term]; ok && tc.Count > c {
					t.Errorf("search %.200s: facet %s: term %q counted %d times at 3 shards, %d at 1", what, name, tc.Term, tc.Count, c)
				} else if ok && tc.Count < c {
					low++
				}
			}
			if low > 0 {
				t.Logf("facet %s: %d of its top %d terms counted lower at 3 shards than at 1 (outside a shard's top terms)", name, low, len(f3.Terms))
			}
		}
		if len(three.Facets) != len(one.Facets) {
			t.Errorf("search %.200s: %d facets at 1 shard, %d at 3", what, len(one.Facets), len(three.Facets))
		}
	})
	t.Logf("%d searches compared between 1 and 3 shards, %d of them with a term bleve's lower-casing broke; %d searches tried again after 429 or 504; %v in all",
		compared.Load(), brokenTerms.Load(), retries.Load(), since())

	// A q over the index's length limit is refused as too complex.
	b, _ := json.Marshal(map[string]string{"q": strings.Repeat("a", 5000)})
	if code, body := httpDo(t, n, "POST", "/v1/indexes/foreign3/search", string(b)); code != 400 || !strings.Contains(string(body), "query_too_complex") {
		t.Errorf("search of a 5000-byte q: %d %.300s, want 400 query_too_complex", code, body)
	}
}
