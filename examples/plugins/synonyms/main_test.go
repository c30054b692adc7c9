package main

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)

func TestSynonyms(t *testing.T) {
	sdktest.SetConfig([]byte(`{"synonyms":{"pop":["soda"],"Chips":["fries","crisps"]}}`))
	expander = nil
	cases := []struct{ q, want string }{
		{"pop", "pop soda"},
		{"cheap chips", "cheap chips fries crisps"},
		{"noodles", ""}, // unchanged: no FlagQ
	}
	for _, c := range cases {
		resp, err := sdktest.Rewrite(&abi.RewriteRequest{Q: c.q})
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if resp.Flags != 0 {
				t.Errorf("%q: changed to %q", c.q, resp.Q)
			}
			continue
		}
		if resp.Flags&abi.FlagQ == 0 || resp.Q != c.want {
			t.Errorf("%q: got %q, want %q", c.q, resp.Q, c.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	sdktest.SetConfig([]byte(`{"synonyms":`))
	expander = nil
	var ge *abi.GuestError
	if _, err := sdktest.Rewrite(&abi.RewriteRequest{Q: "pop"}); err == nil || !asGuest(err, &ge) {
		t.Fatalf("bad config: %v", err)
	}
}

func asGuest(err error, ge **abi.GuestError) bool {
	g, ok := err.(*abi.GuestError)
	*ge = g
	return ok
}
