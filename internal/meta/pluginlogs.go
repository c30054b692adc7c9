package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// ReadPluginLogs returns the kept lines of a team's plugin that r asks for,
// oldest first, and the stream sequence of the last line read (r.After
// when there was none), to read on from.
func (s *Store) ReadPluginLogs(ctx context.Context, team, plugin string, r api.PluginLogsRequest) ([]api.PluginLogLine, uint64, error) {
	limit := r.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, api.MaxPluginLogLines)
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject.PluginLogs(team, plugin)}}
	switch {
	case r.After > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.After+1
	case !r.Since.IsZero():
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &r.Since
	}
	version := strings.TrimPrefix(r.Version, "sha256:")
	var lines []api.PluginLogLine
	last := r.After
	_, err := s.readFrom(ctx, subject.PluginLogsStream, cfg, 0, func(m jetstream.Msg) error {
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		last = md.Sequence.Stream
		var l api.PluginLogLine
		if json.Unmarshal(m.Data(), &l) != nil {
			return nil // not a line: skip it
		}
		if !strings.HasPrefix(l.Version, version) && !strings.HasPrefix(version, l.Version) {
			return nil
		}
		if !r.Since.IsZero() && l.Time.Before(r.Since) {
			return nil
		}
		l.Seq = md.Sequence.Stream
		lines = append(lines, l)
		return nil
	})
	if errors.Is(err, errStalled) {
		err = nil // what was kept then
	}
	if err != nil {
		return nil, last, fmt.Errorf("read the log of plugin %s of team %s: %w", plugin, team, err)
	}
	if len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return lines, last, nil
}
