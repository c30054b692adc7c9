package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// CreateToken makes an HTTP API token for a team (or, with operator, one
// that may do everything) and returns it: the only time it is shown, since
// only its sha256 is stored (an operator's task: it writes the
// quarry-tokens bucket through JetStream). A team token gets
// api.ScopeAdmin unless an option (TokenScope) says otherwise.
func (c *Client) CreateToken(ctx context.Context, team string, operator bool, name string, opts ...TokenOption) (string, api.Token, error) {
	t := api.Token{Team: team, Operator: operator, Name: name}
	for _, o := range opts {
		o(&t)
	}
	switch {
	case operator && team != "":
		return "", api.Token{}, api.BadRequest("a token is for a team or for operators, not both")
	case operator && t.Scope != "":
		return "", api.Token{}, api.BadRequest("an operator token takes no scope (scope %q): it may do everything", t.Scope)
	case !operator:
		if err := subject.ValidIndexName(team); err != nil {
			return "", api.Token{}, api.BadRequest("team name %q: use 1-64 of a-z, 0-9, '-' and '_'", team)
		}
		t.Scope = cmp.Or(t.Scope, api.ScopeAdmin)
		if err := api.ValidTokenScope(t.Scope); err != nil {
			return "", api.Token{}, err
		}
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return "", api.Token{}, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	token := "qk_" + base64.RawURLEncoding.EncodeToString(secret)
	key := api.TokenKey(token)
	t.ID, t.Created = key[:12], time.Now().UTC()
	b, _ := json.Marshal(t)
	if _, err := st.Tokens.Create(ctx, key, b); err != nil {
		return "", api.Token{}, fmt.Errorf("store token: %w", err)
	}
	return token, t, nil
}

// TokenOption sets something of the token CreateToken makes.
type TokenOption func(*api.Token)

// TokenScope gives a team token its scope: api.ScopeSearch (search and
// read documents: a key for a browser), api.ScopeWrite (and write
// documents) or api.ScopeAdmin (everything a team may; the default).
// CreateToken refuses any other, and any scope on an operator token.
func TokenScope(scope string) TokenOption {
	return func(t *api.Token) { t.Scope = scope }
}

// Tokens lists the HTTP API tokens (never the tokens themselves: their
// ids, teams, scopes and names).
func (c *Client) Tokens(ctx context.Context) ([]api.Token, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.Token
	err = eachToken(ctx, st.Tokens, func(_ string, t api.Token) bool { out = append(out, t); return true })
	slices.SortFunc(out, func(a, b api.Token) int { return a.Created.Compare(b.Created) })
	return out, err
}

// RevokeToken removes the token whose id (as Tokens lists it) is id: HTTP
// requests with it are refused within moments.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	var key string
	err = eachToken(ctx, st.Tokens, func(k string, t api.Token) bool {
		if strings.HasPrefix(k, strings.ToLower(id)) && len(id) >= 6 {
			key = k
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if key == "" {
		return api.NotFound("no token %q (quarry token ls lists them; give at least 6 digits of its id)", id)
	}
	return st.Tokens.Delete(ctx, key)
}

// eachToken calls f with every stored token until f returns false.
func eachToken(ctx context.Context, kv jetstream.KeyValue, f func(key string, t api.Token) bool) error {
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("list tokens: %w", err)
	}
	defer keys.Stop()
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read token %s: %w", k[:12], err)
		}
		var t api.Token
		if json.Unmarshal(e.Value(), &t) == nil && !f(k, t) {
			return nil
		}
	}
	return nil
}
