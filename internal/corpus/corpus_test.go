package corpus

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The corpus is deterministic, valid UTF-8, with a large vocabulary and
// field lengths that vary widely.
func TestCorpus(t *testing.T) {
	var a, b bytes.Buffer
	if err := New(Config{Seed: 7}).WriteNDJSON(&a, 500); err != nil {
		t.Fatal(err)
	}
	New(Config{Seed: 7}).WriteNDJSON(&b, 500)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("not deterministic")
	}
	if !utf8.Valid(a.Bytes()) {
		t.Fatal("invalid UTF-8")
	}
	g := New(Config{Seed: 1})
	distinct := map[string]bool{}
	minBody, maxBody := 1<<30, 0
	for range 2000 {
		d := g.Next()
		n := len(strings.Fields(d.Body))
		minBody, maxBody = min(minBody, n), max(maxBody, n)
		for _, w := range strings.Fields(d.Title + " " + d.Body) {
			distinct[w] = true
		}
	}
	if len(distinct) < 5000 || maxBody < 20*minBody {
		t.Fatalf("%d distinct words, body lengths %d-%d", len(distinct), minBody, maxBody)
	}
}
