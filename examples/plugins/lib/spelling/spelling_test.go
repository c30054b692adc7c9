package spelling

import (
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
