package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
)

// decodeTeam decodes a team's stored settings.
func decodeTeam(raw []byte) (*api.TeamSettings, error) {
	var s api.TeamSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, s.Validate()
}

// watchTeams applies every change of the quarry-teams bucket until ctx is
// done.
func (b *Broker) watchTeams(ctx context.Context) error {
	w, err := b.store.Follow(ctx, b.store.Teams, false)
	if err != nil {
		return fmt.Errorf("broker: watch teams: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: team")
			}
			if e == nil {
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				b.admit.Apply(e.Key(), nil)
				continue
			}
			s, err := decodeTeam(e.Value())
			if err != nil {
				// The broker's defaults, as for a team with no settings:
				// keeping the team's last valid limits would leave a
				// broker started since with other limits than this one.
				b.cfg.Logger.Warn("team settings ignored: the broker's defaults hold", "team", e.Key(), "err", err)
				b.admit.Apply(e.Key(), nil)
				continue
			}
			b.admit.Apply(e.Key(), s)
			b.cfg.Logger.Info("team limits", "team", e.Key(), "rate", s.Rate, "burst", s.Burst, "max_in_flight", s.MaxInFlight)
		}
	}
}
