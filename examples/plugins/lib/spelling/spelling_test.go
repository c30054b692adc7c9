package spelling

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// rewrite runs h on q through the encoding a host uses and returns the
// new text ("" if unchanged).
func rewrite(t *testing.T, h interface{ HandleRewrite(in, out []byte) []byte }, q string) string {
	t.Helper()
	var resp abi.RewriteResponse
	if err := abi.DecodeRewriteResponse(h.HandleRewrite(abi.AppendRewriteRequest(nil, &abi.RewriteRequest{Q: q}), nil), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Flags&abi.FlagQ == 0 {
		return ""
	}
	return resp.Q
}

func TestCorrect(t *testing.T) {
	s, err := New([]byte(`{"vocabulary":["Noodles","spicy","burger","pizza"]}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ w, want string }{
		{"noodels", "noodles"}, // transposition, vocabulary lower-cased
		{"spicey", "spicy"},    // deletion
		{"noodle", "noodles"},  // insertion
		{"burgar", "burger"},   // substitution
		{"pizza", "pizza"},     // correct already
		{"xyzzy", "xyzzy"},     // nothing near
		{"pz", "pz"},           // too short to correct
	}
	for _, c := range cases {
		if got := s.Correct(c.w); got != c.want {
			t.Errorf("Correct(%q) = %q, want %q", c.w, got, c.want)
		}
	}
}

// TestCorrectOrder: where several vocabulary words are one edit away, the
// earliest edit's wins (at each position: deletion, swap, change to a–z,
// insertion of a–z), and only a–z are changed to or inserted.
func TestCorrectOrder(t *testing.T) {
	cases := []struct {
		vocab []string
		w     string
		want  string
	}{
		{[]string{"aacd", "abcd"}, "bacd", "abcd"}, // a swap at 0 before a change at 0
		{[]string{"acd", "bbcd"}, "abcd", "bbcd"},  // a change at 0 before a deletion at 1
		{[]string{"xabc", "bc"}, "abc", "bc"},      // a deletion at 0 before an insertion at 0
		{[]string{"zbc", "abcz"}, "abc", "zbc"},    // a change at 0 before an insertion at the end
		{[]string{"abd", "abcc"}, "abc", "abcc"},   // at 2: inserting c before changing to d
		{[]string{"abcd", "abb"}, "abc", "abb"},    // at 2: changing to b before inserting d
		{[]string{"abcd", "abdc"}, "abc", "abdc"},  // inserting d at 2 before at 3
		{[]string{"a-bc"}, "abc", "abc"},           // no insertion of "-"
		{[]string{"a-c"}, "abc", "abc"},            // no change to "-"
		{[]string{"ab"}, "aab", "ab"},              // a doubled letter deleted
		{[]string{"toolongword"}, "word", "word"},  // no word of a length one edit away
		{[]string{"tea"}, strings.Repeat("tea", 1000), strings.Repeat("tea", 1000)},
	}
	for _, c := range cases {
		config, _ := json.Marshal(Config{Vocabulary: c.vocab})
		s, err := New(config)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Correct(c.w); got != c.want {
			t.Errorf("vocabulary %v: Correct(%.20q) = %.20q, want %.20q", c.vocab, c.w, got, c.want)
		}
		if got, want := s.Correct(c.w), correctByStrings(s, c.w); got != want {
			t.Errorf("vocabulary %v: Correct(%.20q) = %.20q, by strings %.20q", c.vocab, c.w, got, want)
		}
	}
}

// Hooks made with different configurations live side by side in one
// process, as two native instances of differently configured plugins do.
func TestHooksOwnConfig(t *testing.T) {
	a, err := Hooks([]byte(`{"vocabulary":["noodles"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Hooks([]byte(`{"vocabulary":["needles"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rewrite(t, a, "spicy noodels"); got != "spicy noodles" {
		t.Errorf("a: %q", got)
	}
	if got := rewrite(t, b, "neddles"); got != "needles" {
		t.Errorf("b: %q", got)
	}
	if _, err := Hooks([]byte(`{"vocabulary":`)); err == nil {
		t.Error("bad configuration accepted")
	}
	// A word whose index would cost its length squared: refused by name.
	long := strings.Repeat("a", MaxWordBytes+1)
	if _, err := Hooks([]byte(`{"vocabulary":["tea","` + long + `"]}`)); err == nil || !strings.Contains(err.Error(), "65 bytes, at most 64") {
		t.Errorf("a vocabulary word of %d bytes: %v", len(long), err)
	}
	if _, err := Hooks([]byte(`{"vocabulary":["` + long[1:] + `"]}`)); err != nil {
		t.Errorf("a vocabulary word of %d bytes: %v", MaxWordBytes, err)
	}
}

// TestCorrectAllocates: a word is corrected, or left as it is, with no
// allocation (the answer is the vocabulary's string).
func TestCorrectAllocates(t *testing.T) {
	s, err := New([]byte(`{"vocabulary":["noodles","spicy","burger","pizza","dumplings","margherita"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w      string
		allocs float64
	}{{"margheritta", 0}, {"dumplinsg", 0}, {"xyzzyq", 0}, {"spicy", 0}, {strings.Repeat("x", 100), 0}} {
		if got := testing.AllocsPerRun(100, func() { s.Correct(c.w) }); got > c.allocs {
			t.Errorf("Correct(%q): %g allocations, want at most %g", c.w, got, c.allocs)
		}
	}
}

// BenchmarkCorrect: a misspelt word found late in the edits, a word with
// no correction (every edit ranked before), and one longer than any word
// of the vocabulary by more than one.
//
//	go test -run XXX -bench Correct -benchmem ./examples/plugins/lib/spelling/
func BenchmarkCorrect(b *testing.B) {
	s, err := New([]byte(`{"vocabulary":["noodles","spicy","burger","pizza","sushi","curry","chicken","vegan","ramen","tacos"]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []string{"tacoz", "biryani", "quesadilla"} {
		b.Run(w, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Correct(w)
			}
		})
	}
}

// correctByStrings is Correct written the plain way: every edit tried in
// Correct's order, a string made for each, looked up in the vocabulary.
func correctByStrings(s *Speller, w string) string {
	lw := strings.ToLower(w)
	if s.vocab[lw] || len(lw) < 3 {
		return w
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i <= len(lw); i++ {
		if i < len(lw) && s.vocab[lw[:i]+lw[i+1:]] {
			return lw[:i] + lw[i+1:]
		}
		if i+1 < len(lw) {
			if t := lw[:i] + lw[i+1:i+2] + lw[i:i+1] + lw[i+2:]; s.vocab[t] {
				return t
			}
		}
		for _, c := range letters {
			if i < len(lw) {
				if t := lw[:i] + string(c) + lw[i+1:]; s.vocab[t] {
					return t
				}
			}
			if t := lw[:i] + string(c) + lw[i:]; s.vocab[t] {
				return t
			}
		}
	}
	return w
}

// FuzzCorrect: Correct answers what correctByStrings answers for any
// word, against a vocabulary with one more word of the fuzzer's (so that
// words near each other, doubled letters and bytes outside a–z are in
// the vocabulary as well as in the word).
//
//	go test -run XXX -fuzz FuzzCorrect ./examples/plugins/lib/spelling/
func FuzzCorrect(f *testing.F) {
	for _, c := range [][2]string{{"noodles", "noodels"}, {"teas", "tea"}, {"aab", "aba"}, {"café", "cafe"}, {"pizza", "piza"}, {"é", "ée"}, {"abc", "ABCD"}} {
		f.Add(c[0], c[1])
	}
	vocab := []string{"noodles", "spicy", "burger", "pizza", "tea", "teas", "pita", "tacos"}
	f.Fuzz(func(t *testing.T, word, w string) {
		if len(w) > 200 {
			return // the reference is slow on long words
		}
		config, err := json.Marshal(Config{Vocabulary: append(slices.Clone(vocab), word)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(config)
		if err != nil {
			if strings.Contains(err.Error(), fmt.Sprintf("bytes, at most %d", MaxWordBytes)) {
				return // a word too long for the index (TestHooksOwnConfig)
			}
			t.Fatal(err)
		}
		if got, want := s.Correct(w), correctByStrings(s, w); got != want {
			t.Fatalf("vocabulary %s: Correct(%q) = %q, by strings %q", config, w, got, want)
		}
	})
}

// TestCorrectAsByStrings: Correct answers what the plain way of writing
// it (correctByStrings) answers, on every word one or two random edits
// from the vocabulary and on random words.
func TestCorrectAsByStrings(t *testing.T) {
	vocab := []string{"noodles", "spicy", "burger", "pizza", "sushi", "curry", "chicken", "vegan", "ramen", "tacos", "salad", "dumplings", "margherita", "pasta", "tea", "teas", "pita"}
	s, err := New([]byte(`{"vocabulary":["` + strings.Join(vocab, `","`) + `"]}`))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mutate := func(w string) string {
		b := []byte(w)
		i := rng.IntN(len(b) + 1)
		l := byte('a' + rng.IntN(26))
		switch rng.IntN(3) {
		case 0:
			if i < len(b) {
				return string(append(b[:i:i], b[i+1:]...))
			}
		case 1:
			if i < len(b) {
				b[i] = l
				return string(b)
			}
		}
		return string(append(append(b[:i:i], l), b[i:]...))
	}
	for n := range 5000 {
		w := vocab[rng.IntN(len(vocab))]
		for range 1 + n%2 {
			w = mutate(w)
		}
		if n%5 == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if got, want := s.Correct(w), correctByStrings(s, w); got != want {
			t.Fatalf("Correct(%q) = %q, by strings %q", w, got, want)
		}
	}
}
