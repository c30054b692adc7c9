package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// CreateToken stores a team token's scope (admin when none is given) and
// refuses a scope it does not know, naming the valid ones, and any scope
// on an operator token; Tokens lists the scopes.
func TestCreateTokenScopes(t *testing.T) {
	t.Parallel()
	c, _, _ := startServer(t, "")
	ctx := context.Background()
	cases := []struct {
		name     string
		team     string
		operator bool
		opts     []client.TokenOption
		scope    string // stored; "" for an operator's
		err      string // "": made
	}{
		{"a search token", "food", false, []client.TokenOption{client.TokenScope(api.ScopeSearch)}, "search", ""},
		{"a write token", "food", false, []client.TokenOption{client.TokenScope(api.ScopeWrite)}, "write", ""},
		{"an admin token", "food", false, []client.TokenOption{client.TokenScope(api.ScopeAdmin)}, "admin", ""},
		{"no scope given", "food", false, nil, "admin", ""},
		{"an operator token", "", true, nil, "", ""},
		{"an unknown scope", "food", false, []client.TokenOption{client.TokenScope("read")}, "", `token scope "read": want search, write, admin`},
		{"an operator token with a scope", "", true, []client.TokenOption{client.TokenScope(api.ScopeSearch)}, "", `an operator token takes no scope (scope "search")`},
	}
	made := map[string]string{} // id → scope
	for _, tc := range cases {
		tok, tk, err := c.CreateToken(ctx, tc.team, tc.operator, tc.name, tc.opts...)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || api.CodeOf(err) != api.CodeBadRequest):
			t.Errorf("%s: %v, want bad_request %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (tk.Scope != tc.scope || tk.ScopeOf() != tc.scope || !strings.HasPrefix(tok, "qk_")):
			t.Errorf("%s: scope %q (ScopeOf %q), token %q; want %q", tc.name, tk.Scope, tk.ScopeOf(), tok, tc.scope)
		case tc.err == "":
			made[tk.ID] = tc.scope
		}
	}
	tokens, err := c.Tokens(ctx)
	if err != nil || len(tokens) != len(made) {
		t.Fatalf("Tokens: %d %v, want %d", len(tokens), err, len(made))
	}
	for _, tk := range tokens {
		if tk.Scope != made[tk.ID] {
			t.Errorf("Tokens: %s (%s) has scope %q, want %q", tk.ID, tk.Name, tk.Scope, made[tk.ID])
		}
	}
}
