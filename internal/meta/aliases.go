package meta

import (
	"context"
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

// Aliases live in their own bucket, one key per alias, its value an
// api.Alias. An alias and an index never share a name: each side checks
// the other before it writes (CreateIndex, CreateAlias) and an alias
// checks again after, undoing itself if an index of its name appeared
// meanwhile. A switch is a compare-and-set on the alias's key: readers
// see the old index or the new one, never neither.

// DecodeAlias decodes a stored alias.
func DecodeAlias(b []byte) (api.Alias, error) {
	var a api.Alias
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("decode alias: %w", err)
	}
	return a, nil
}

// Alias returns an alias and its revision, or an api.ErrNotFound error.
func (s *Store) Alias(ctx context.Context, name string) (api.Alias, uint64, error) {
	if err := subject.ValidIndexName(name); err != nil {
		return api.Alias{}, 0, api.BadRequest("alias: %v", err)
	}
	e, err := s.Aliases.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return api.Alias{}, 0, api.NotFound("alias %q does not exist", name)
	}
	if err != nil {
		return api.Alias{}, 0, fmt.Errorf("read alias %q: %w", name, err)
	}
	a, err := DecodeAlias(e.Value())
	return a, e.Revision(), err
}

// ListAliases returns every alias, sorted by name.
func (s *Store) ListAliases(ctx context.Context) ([]api.Alias, error) {
	out, err := ListJSON[api.Alias](ctx, s.Aliases, "")
	if err != nil {
		return nil, fmt.Errorf("list aliases: %w", err)
	}
	slices.SortFunc(out, func(a, b api.Alias) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Resolve returns the definition of the index name names: the index of
// that name, or the one the alias of that name points at.
func (s *Store) Resolve(ctx context.Context, name string) (api.IndexDefinition, error) {
	def, err := s.Index(ctx, name)
	if api.CodeOf(err) != api.CodeNotFound {
		return def, err
	}
	a, _, aerr := s.Alias(ctx, name)
	if aerr != nil {
		return def, err // "index does not exist": an alias is not asked for by name
	}
	def, err = s.Index(ctx, a.Index)
	if api.CodeOf(err) == api.CodeNotFound {
		return def, api.NotFound("alias %q points at index %q, which does not exist", name, a.Index)
	}
	return def, err
}

// aliasTarget reads the index an alias is to point at: it must exist
// (an alias of an alias is refused, naming the index to give instead).
func (s *Store) aliasTarget(ctx context.Context, name, index string) (api.IndexDefinition, error) {
	def, err := s.Index(ctx, index)
	if api.CodeOf(err) == api.CodeNotFound {
		if a, _, aerr := s.Alias(ctx, index); aerr == nil {
			return def, api.BadRequest("alias %q cannot point at %q, an alias itself: point it at the index %q", name, index, a.Index)
		}
		return def, api.NotFound("alias %q cannot point at index %q: it does not exist", name, index)
	}
	return def, err
}

// CreateAlias makes the alias name point at index. It fails with
// api.ErrConflict if an alias or an index is named name, api.ErrNotFound
// if index does not exist and api.ErrBadRequest if a name is invalid or
// index is an alias.
func (s *Store) CreateAlias(ctx context.Context, name, index string) (api.Alias, error) {
	if err := subject.ValidIndexName(name); err != nil {
		return api.Alias{}, api.BadRequest("alias: %v", err)
	}
	if _, err := s.Index(ctx, name); err == nil {
		return api.Alias{}, api.Errorf(api.CodeConflict, "an index is named %q: an alias needs a name of its own", name)
	} else if api.CodeOf(err) != api.CodeNotFound {
		return api.Alias{}, err
	}
	def, err := s.aliasTarget(ctx, name, index)
	if err != nil {
		return api.Alias{}, err
	}
	a := api.Alias{Name: name, Index: def.Name, Team: def.TeamOf(), Updated: time.Now().UTC().Truncate(time.Millisecond)}
	b, err := json.Marshal(a)
	if err != nil {
		return a, err
	}
	if _, err := s.Aliases.Create(ctx, name, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return a, api.Errorf(api.CodeConflict, "alias %q already exists (quarry alias switch moves it)", name)
		}
		return a, fmt.Errorf("store alias %q: %w", name, err)
	}
	// An index of the name made between the check and the write: it
	// was there first.
	if _, err := s.Index(ctx, name); err == nil {
		_ = s.Aliases.Purge(ctx, name)
		return api.Alias{}, api.Errorf(api.CodeConflict, "an index is named %q: an alias needs a name of its own", name)
	}
	return a, nil
}

// SwitchAlias points the alias name at index instead, atomically: a
// search or write that reads the alias after the switch gets index. The
// new index must be of the alias's team (both of none counts as the
// same: the operator's).
func (s *Store) SwitchAlias(ctx context.Context, name, index string) (api.Alias, error) {
	def, err := s.aliasTarget(ctx, name, index)
	if err != nil {
		return api.Alias{}, err
	}
	for range 5 {
		a, rev, err := s.Alias(ctx, name)
		if err != nil {
			return a, err
		}
		old, err := s.Index(ctx, a.Index)
		switch {
		case err == nil && old.Team != def.Team:
			return a, api.Errorf(api.CodeForbidden, "alias %q is team %s's (index %q): index %q is team %s's; an alias stays with its team",
				name, a.Team, a.Index, def.Name, def.TeamOf())
		case err == nil, api.CodeOf(err) == api.CodeNotFound:
		default:
			return a, err
		}
		if err != nil && a.Team != def.TeamOf() { // its index is gone: the team it had
			return a, api.Errorf(api.CodeForbidden, "alias %q is team %s's: index %q is team %s's; an alias stays with its team", name, a.Team, def.Name, def.TeamOf())
		}
		a.Index, a.Team, a.Updated = def.Name, def.TeamOf(), time.Now().UTC().Truncate(time.Millisecond)
		b, err := json.Marshal(a)
		if err != nil {
			return a, err
		}
		if _, err := s.Aliases.Update(ctx, name, b, rev); err == nil {
			return a, nil
		} else if !isWrongSeq(err) {
			return a, fmt.Errorf("switch alias %q: %w", name, err)
		}
	}
	return api.Alias{}, api.Errorf(api.CodeConflict, "alias %q is being switched concurrently; try again", name)
}

// DeleteAlias removes an alias; the index it points at stays.
func (s *Store) DeleteAlias(ctx context.Context, name string) error {
	if _, _, err := s.Alias(ctx, name); err != nil {
		return err
	}
	if err := s.Aliases.Purge(ctx, name); err != nil {
		return fmt.Errorf("delete alias %q: %w", name, err)
	}
	return nil
}

// AliasesOf names the aliases that point at index.
func (s *Store) AliasesOf(ctx context.Context, index string) ([]string, error) {
	all, err := s.ListAliases(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range all {
		if a.Index == index {
			names = append(names, a.Name)
		}
	}
	return names, nil
}
