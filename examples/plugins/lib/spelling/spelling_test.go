package spelling

import (
	"math/rand/v2"
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
}

// TestCorrectAllocates: a word is corrected with one allocation (the
// answer), and a word left as it is with none.
func TestCorrectAllocates(t *testing.T) {
	s, err := New([]byte(`{"vocabulary":["noodles","spicy","burger","pizza","dumplings","margherita"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w      string
		allocs float64
	}{{"margheritta", 1}, {"dumplinsg", 1}, {"xyzzyq", 0}, {"spicy", 0}} {
		if got := testing.AllocsPerRun(100, func() { s.Correct(c.w) }); got > c.allocs {
			t.Errorf("Correct(%q): %g allocations, want at most %g", c.w, got, c.allocs)
		}
	}
}

// BenchmarkCorrect: a misspelt word found late in the edits, and a word
// with no correction (every edit tried).
//
//	go test -run XXX -bench Correct -benchmem ./examples/plugins/lib/spelling/
func BenchmarkCorrect(b *testing.B) {
	s, err := New([]byte(`{"vocabulary":["noodles","spicy","burger","pizza","sushi","curry","chicken","vegan","ramen","tacos"]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []string{"tacoz", "quesadilla"} {
		b.Run(w, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Correct(w)
			}
		})
	}
}

// TestCorrectAsByStrings: Correct answers what the plain way of writing
// it (a string made for each edit, in the same order) answers, on every
// word one or two random edits from the vocabulary and on random words.
func TestCorrectAsByStrings(t *testing.T) {
	vocab := []string{"noodles", "spicy", "burger", "pizza", "sushi", "curry", "chicken", "vegan", "ramen", "tacos", "salad", "dumplings", "margherita", "pasta", "tea", "teas", "pita"}
	s, err := New([]byte(`{"vocabulary":["` + strings.Join(vocab, `","`) + `"]}`))
	if err != nil {
		t.Fatal(err)
	}
	byStrings := func(w string) string {
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
		if got, want := s.Correct(w), byStrings(w); got != want {
			t.Fatalf("Correct(%q) = %q, by strings %q", w, got, want)
		}
	}
}
