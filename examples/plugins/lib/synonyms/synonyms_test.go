package synonyms

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func TestExpand(t *testing.T) {
	e, err := New([]byte(`{"synonyms":{"pop":["soda"],"Chips":["fries","crisps"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ q, want string }{
		{"pop", "pop soda"},
		{"cheap CHIPS", "cheap CHIPS fries crisps"},
		{"noodles", "noodles"},
	}
	for _, c := range cases {
		r := sdk.RewriteRequest{Q: c.q}
		if err := e.Rewrite(&r); err != nil || r.Q != c.want {
			t.Errorf("%q: got %q (%v), want %q", c.q, r.Q, err, c.want)
		}
	}
}

// Hooks go through the encoding a host uses, each with its own
// configuration.
func TestHooks(t *testing.T) {
	h, err := Hooks([]byte(`{"synonyms":{"hot":["spicy"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var resp abi.RewriteResponse
	if err := abi.DecodeRewriteResponse(h.HandleRewrite(abi.AppendRewriteRequest(nil, &abi.RewriteRequest{Q: "hot wings"}), nil), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Flags&abi.FlagQ == 0 || resp.Q != "hot wings spicy" {
		t.Fatalf("got %q (flags %x)", resp.Q, resp.Flags)
	}
	if _, err := Hooks([]byte(`{"synonyms":`)); err == nil {
		t.Error("bad configuration accepted")
	}
}
