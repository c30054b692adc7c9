package registry

import (
	"context"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// pluginLogs answers plugin.logs: the kept lines of the index's team's
// plugin name (brokers publish them on quarry.v1.logs.<team>.<plugin>).
// A team's plugins of one name share the subject over its indexes; each
// line names its version.
func (s *Service) pluginLogs(ctx context.Context, index, name string, r api.PluginLogsRequest) (*api.PluginLogs, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if r.Limit < 0 || r.Limit > api.MaxPluginLogLines {
		return nil, api.BadRequest("logs.limit must be 0-%d, got %d", api.MaxPluginLogLines, r.Limit)
	}
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	team := def.TeamOf()
	lines, last, err := s.store.ReadPluginLogs(ctx, team, name, r)
	if err != nil {
		return nil, err
	}
	if lines == nil {
		lines = []api.PluginLogLine{}
	}
	return &api.PluginLogs{Index: index, Team: team, Plugin: name, Lines: lines, Subject: subject.PluginLogs(team, name), Last: last}, nil
}
