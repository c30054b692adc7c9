package main

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)

func TestSpelling(t *testing.T) {
	sdktest.SetConfig([]byte(`{"vocabulary":["noodles","spicy","burger","pizza"]}`))
	speller = nil
	cases := []struct{ q, want string }{
		{"noodels", "noodles"},             // transposition
		{"spicey noodle", "spicy noodles"}, // deletion, insertion
		{"burgar", "burger"},               // substitution
		{"pizza", ""},                      // correct already
		{"xyzzy", ""},                      // nothing near
	}
	for _, c := range cases {
		resp, err := sdktest.Rewrite(&abi.RewriteRequest{Q: c.q})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if resp.Flags&abi.FlagQ != 0 {
			got = resp.Q
		}
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.q, got, c.want)
		}
	}
}
