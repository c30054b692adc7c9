package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
)

// Guard enforces over HTTP what NATS permissions enforce over NATS
// (docs/teams.md): a request carries a token (Authorization: Bearer …);
// a team's token may act on its team's indexes only, as far as its scope
// goes (search: search and read documents; write: and write documents;
// admin: and manage their plugins, pipelines, judgements and gates);
// everything else (indexes, query settings, roles) is for operator
// tokens. No token: 401; a token outside its team or its scope: 403.
// Tokens are kept as the sha256 of each (api.Token), so the store never
// holds one that works.
//
// A Guard follows the quarry-tokens, quarry-indexes and quarry-aliases
// buckets, so a revoked token stops working, and an index's or alias's
// team is known, within moments.
type Guard struct {
	ready chan struct{}

	mu     sync.RWMutex
	tokens map[string]api.Token // by hex sha256
	teams  map[string]string    // index → its team (TeamOf)
	// aliasTeams maps an alias to its team (api.Alias.Team): a team's
	// token may search, read and write through its team's aliases.
	aliasTeams map[string]string
}

// NewGuard makes a guard; Run fills it.
func NewGuard() *Guard {
	return &Guard{ready: make(chan struct{}), tokens: map[string]api.Token{}, teams: map[string]string{}, aliasTeams: map[string]string{}}
}

// Ready is closed once the guard knows every token and index.
func (g *Guard) Ready() <-chan struct{} { return g.ready }

// Run follows the tokens and indexes until ctx is done.
func (g *Guard) Run(ctx context.Context, store *meta.Store) error {
	tokens, err := store.Follow(ctx, store.Tokens, false)
	if err != nil {
		return fmt.Errorf("http guard: watch tokens: %w", err)
	}
	defer tokens.Stop()
	indexes, err := store.Follow(ctx, store.Indexes, false)
	if err != nil {
		return fmt.Errorf("http guard: watch indexes: %w", err)
	}
	defer indexes.Stop()
	aliases, err := store.Follow(ctx, store.Aliases, false)
	if err != nil {
		return fmt.Errorf("http guard: watch aliases: %w", err)
	}
	defer aliases.Stop()
	tokensDone, indexesDone, aliasesDone := false, false, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-tokens.Updates():
			if !ok {
				return fmt.Errorf("http guard: the token watch ended")
			}
			if e == nil {
				tokensDone = true
			} else {
				g.applyToken(e)
			}
		case e, ok := <-indexes.Updates():
			if !ok {
				return fmt.Errorf("http guard: the index watch ended")
			}
			if e == nil {
				indexesDone = true
			} else {
				g.applyIndex(e)
			}
		case e, ok := <-aliases.Updates():
			if !ok {
				return fmt.Errorf("http guard: the alias watch ended")
			}
			if e == nil {
				aliasesDone = true
			} else {
				g.applyAlias(e)
			}
		}
		if tokensDone && indexesDone && aliasesDone {
			select {
			case <-g.ready:
			default:
				close(g.ready)
			}
		}
	}
}

func (g *Guard) applyToken(e jetstream.KeyValueEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var t api.Token
	if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &t) != nil {
		delete(g.tokens, e.Key())
		return
	}
	g.tokens[e.Key()] = t
}

func (g *Guard) applyIndex(e jetstream.KeyValueEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	def, err := meta.DecodeIndex(e.Value())
	if e.Operation() != jetstream.KeyValuePut || err != nil {
		delete(g.teams, e.Key())
		return
	}
	g.teams[e.Key()] = def.TeamOf()
}

func (g *Guard) applyAlias(e jetstream.KeyValueEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, err := meta.DecodeAlias(e.Value())
	if e.Operation() != jetstream.KeyValuePut || err != nil {
		delete(g.aliasTeams, e.Key())
		return
	}
	g.aliasTeams[e.Key()] = a.Team
}

// access is who may use a route.
type access struct {
	who audience
	// scope is the narrowest scope (api.TokenScopes) of a team token
	// that may use the route; "": any. Operator tokens may use every
	// route.
	scope string
}

// audience is whose tokens a route takes.
type audience uint8

const (
	anyone     audience = iota // no token needed (health)
	knownToken                 // any known token, of any team or an operator
	indexTeam                  // a token of the index's team, or an operator's
	operators                  // operators' tokens only
)

var (
	open     = access{who: anyone}
	anyToken = access{who: knownToken}
	operator = access{who: operators}
)

// team is the access of a route of an index's team: its team's tokens of
// scope at least scope (and operators') may use it. Each route names the
// scope it needs; that is the whole of what each scope may do.
func team(scope string) access { return access{who: indexTeam, scope: scope} }

// check authorizes r for a route of the given access: nil, or the error
// to answer.
func (g *Guard) check(r *http.Request, a access) error {
	if a.who == anyone {
		return nil
	}
	select {
	case <-g.ready:
	default:
		return api.Errorf(api.CodeUnavailable, "the HTTP API is still loading its tokens; try again")
	}
	auth := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || raw == "" {
		return &api.Error{Code: api.CodeUnauthorized, Message: "this HTTP API needs a token: Authorization: Bearer <token> (quarry token create)"}
	}
	g.mu.RLock()
	t, known := g.tokens[api.TokenKey(raw)]
	index := r.PathValue("index")
	owner, exists := g.teams[index]
	if !exists {
		owner, exists = g.aliasTeams[index]
	}
	g.mu.RUnlock()
	switch {
	case !known:
		return &api.Error{Code: api.CodeUnauthorized, Message: "unknown or revoked token"}
	case t.Operator:
		return nil
	case a.who == operators:
		return api.Errorf(api.CodeForbidden, "team %s's token may not do this: it is for operator tokens (team tokens search their indexes, write their documents and manage their plugins and pipelines)", t.Team)
	case a.who == indexTeam && (!exists || owner != t.Team):
		return api.Errorf(api.CodeForbidden, "team %s's token may not use index %q", t.Team, index)
	case !api.ScopeCovers(t.ScopeOf(), a.scope):
		return api.Errorf(api.CodeForbidden, "team %s's token (scope %s) may not %s %s: it needs scope %s (quarry token create --team %s --scope %s)",
			t.Team, t.ScopeOf(), r.Method, r.URL.Path, a.scope, t.Team, a.scope)
	}
	return nil
}

// Identity is who a request's token is (GET /v1/me): what the console
// shows and which indexes it offers.
type Identity struct {
	// Auth is whether the HTTP API asks for tokens at all.
	Auth     bool   `json:"auth"`
	Team     string `json:"team,omitempty"`
	Operator bool   `json:"operator"`
	// Scope is a team token's scope (api.TokenScopes; admin for a token
	// stored without one): what it may do on Indexes, so that the
	// console offers only that. Empty for an operator (everything).
	Scope string `json:"scope,omitempty"`
	Name  string `json:"name,omitempty"`
	// Indexes are those the token may use: its team's, or every index
	// for an operator.
	Indexes []string `json:"indexes"`
}

// identity is the Identity of r's token, which check has accepted.
func (g *Guard) identity(r *http.Request) Identity {
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.RLock()
	defer g.mu.RUnlock()
	t := g.tokens[api.TokenKey(raw)]
	who := Identity{Team: t.Team, Operator: t.Operator, Scope: t.ScopeOf(), Name: t.Name}
	if !t.Operator {
		for index, owner := range g.teams {
			if owner == t.Team {
				who.Indexes = append(who.Indexes, index)
			}
		}
		slices.Sort(who.Indexes)
	}
	return who
}
