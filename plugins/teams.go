package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Teams keeps one Runtime per team, each made on first use with the same
// Config, so a team's plugins share instances and memory only with that
// team's. The compilation cache (CacheDir) is shared by every team and by
// whoever else uses the directory (the registry, which validates each
// push): compiled code is keyed by the module's bytes, so a module
// validated once is not compiled again when a team's runtime loads it,
// and no team can reach another's through it.
type Teams struct {
	cfg Config

	mu     sync.Mutex
	rts    map[string]*Runtime
	closed bool
}

// NewTeams makes an empty set of team runtimes.
func NewTeams(cfg Config) *Teams { return &Teams{cfg: cfg, rts: map[string]*Runtime{}} }

// Runtime returns the team's runtime, starting it on first use. Team names
// become directory names: the caller validates them.
func (t *Teams) Runtime(ctx context.Context, team string) (*Runtime, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("plugin runtimes are closed")
	}
	if r, ok := t.rts[team]; ok {
		return r, nil
	}
	cfg := t.cfg
	cfg.Team = team
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With("team", team)
	}
	r, err := NewRuntime(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin runtime of team %s: %w", team, err)
	}
	t.rts[team] = r
	return r, nil
}

// Close closes every team's runtime.
func (t *Teams) Close(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var errs []error
	for _, r := range t.rts {
		errs = append(errs, r.Close(ctx))
	}
	t.rts = nil
	return errors.Join(errs...)
}
