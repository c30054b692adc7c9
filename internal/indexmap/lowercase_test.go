package indexmap

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A mapping stored by Canonical lower-cases words whose letters shrink
// (İ, ẞ, the Kelvin sign) into the right, valid words, in bleve's
// analyzers; a mapping stored before keeps bleve's filter, which breaks
// them (so an existing index analyses its queries as its documents).
func TestLowerCase(t *testing.T) {
	raw := json.RawMessage(`{"default_mapping":{"properties":{"t":{"fields":[{"name":"t","type":"text","analyzer":"standard"}]}}}}`)
	canon, err := Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), `"to_lower":{"type":"quarry_fold"}`) {
		t.Fatalf("canonical mapping without Quarry's to_lower: %s", canon)
	}
	again, err := Canonical(canon)
	if err != nil || string(again) != string(canon) {
		t.Fatalf("canonical twice: %v\n%s\n%s", err, canon, again)
	}
	terms := func(raw json.RawMessage, analyzer, text string) []string {
		t.Helper()
		m, err := Build(raw)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tok := range m.AnalyzerNamed(analyzer).Analyze([]byte(text)) {
			out = append(out, string(tok.Term))
		}
		return out
	}
	text := "İstanbul STRAẞE \u212Aelvin ΟΔΟΣ Ⱥb ok"
	for _, analyzer := range []string{"standard", "en"} {
		got := strings.Join(terms(canon, analyzer, text), " ")
		want := map[string]string{"standard": "istanbul straße kelvin οδος ⱥb ok", "en": "istanbul straße kelvin οδος ⱥb ok"}[analyzer]
		if got != want {
			t.Errorf("%s: %q, want %q", analyzer, got, want)
		}
	}
	broken := terms(raw, "standard", "İstanbul")
	if len(broken) != 1 || utf8.ValidString(broken[0]) {
		t.Errorf("a mapping stored before keeps bleve's to_lower: %q", broken)
	}
	// Composed and decomposed, full-width, ligatures, superscripts: one
	// term each, after NFKC.
	for text, want := range map[string]string{
		"Café CAFÉ Cafe\u0301 CAFE\u0301": "café café café café",
		"ｐｉｚｚａ ＰＩＺＺＡ pizza":               "pizza pizza pizza",
		"ﬁsh Ⅻ":                           "fish xii",
		"ＩＳＴＡＮＢＵＬ İstanbul":               "istanbul istanbul",
	} {
		if got := strings.Join(terms(canon, "standard", text), " "); got != want {
			t.Errorf("standard %q: %q, want %q", text, got, want)
		}
	}
	// A mapping stored with Quarry's earlier filter keeps it: its queries
	// are analysed as its documents were, without NFKC.
	old := json.RawMessage(`{"analysis":{"token_filters":{"to_lower":{"type":"quarry_to_lower"}}},"default_mapping":{"properties":{"t":{"fields":[{"name":"t","type":"text","analyzer":"standard"}]}}}}`)
	oldCanon, err := Canonical(old)
	if err != nil || !strings.Contains(string(oldCanon), `"to_lower":{"type":"quarry_to_lower"}`) {
		t.Fatalf("a mapping stored with quarry_to_lower: %v %s", err, oldCanon)
	}
	if got := strings.Join(terms(oldCanon, "standard", "ｐｉｚｚａ İstanbul"), " "); got != "ｐｉｚｚａ istanbul" {
		t.Errorf("quarry_to_lower: %q, want full-width kept", got)
	}
	// A mapping's own to_lower stays.
	own := json.RawMessage(`{"analysis":{"token_filters":{"to_lower":{"type":"to_lower"}}}}`)
	canon, err = Canonical(own)
	if err != nil || !strings.Contains(string(canon), `"to_lower":{"type":"to_lower"}`) {
		t.Fatalf("a mapping's own to_lower: %v %s", err, canon)
	}
}

func FuzzToLower(f *testing.F) {
	for _, s := range []string{"İstanbul", "STRAẞE", "ΟΔΟΣ", "Ⱥ", "\xff\xfeA", "ok"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := string(b)
		got := string(toLower(append([]byte(nil), b...)))
		if utf8.ValidString(in) && !utf8.ValidString(got) {
			t.Fatalf("%q lower-cased to invalid UTF-8 %q", in, got)
		}
		if utf8.ValidString(in) && !strings.HasSuffix(in, "Σ") && got != strings.ToLower(in) {
			t.Fatalf("%q: %q, strings.ToLower %q", in, got, strings.ToLower(in))
		}
	})
}

// BenchmarkFold: the standard analyzer over a catalogue-like description
// with Quarry's earlier lower case and with the fold (NFKC first), to
// price the normalization at indexing and query time.
func BenchmarkFold(b *testing.B) {
	text := []byte("Hand-stretched Neapolitan pizza with San Marzano tomatoes, fior di latte, fresh basil and a drizzle of extra virgin olive oil; café crème on the side")
	for _, filter := range []string{LowerCaseType, FoldType} {
		m, err := Build(json.RawMessage(`{"analysis":{"token_filters":{"to_lower":{"type":"` + filter + `"}}}}`))
		if err != nil {
			b.Fatal(err)
		}
		a := m.AnalyzerNamed("standard")
		b.Run(filter, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.Analyze(text)
			}
		})
	}
}
