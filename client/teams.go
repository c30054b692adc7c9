package client

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

// SetTeam stores a team's limits (an operator's task: it writes the
// quarry-teams bucket through JetStream). Every broker applies them within
// moments.
func (c *Client) SetTeam(ctx context.Context, s api.TeamSettings) (api.TeamSettings, error) {
	if err := subject.ValidIndexName(s.Name); err != nil {
		return s, api.BadRequest("team name %q: use 1-64 of a-z, 0-9, '-' and '_'", s.Name)
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return s, err
	}
	s.Updated = time.Now().UTC()
	b, err := json.Marshal(s)
	if err != nil {
		return s, fmt.Errorf("encode team %s: %w", s.Name, err)
	}
	if _, err := st.Teams.Put(ctx, s.Name, b); err != nil {
		return s, fmt.Errorf("store team %s: %w", s.Name, err)
	}
	return s, nil
}

// Teams lists the teams that have settings, by name.
func (c *Client) Teams(ctx context.Context) ([]api.TeamSettings, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := st.Teams.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	defer keys.Stop()
	var out []api.TeamSettings
	for k := range keys.Keys() {
		e, err := st.Teams.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read team %s: %w", k, err)
		}
		var s api.TeamSettings
		if json.Unmarshal(e.Value(), &s) == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b api.TeamSettings) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
