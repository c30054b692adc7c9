package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
)

// PluginLogs returns the kept lines of an index's plugin (its team's
// plugin of that name), oldest first: at most r.Limit (default 100), of
// the version r.Version (a digest prefix), since r.Since, after r.After.
// A team's NATS user needs only the admin API of its index.
func (c *Client) PluginLogs(ctx context.Context, index, name string, r api.PluginLogsRequest) (*api.PluginLogs, error) {
	var out api.PluginLogs
	err := c.admin(ctx, index, "plugin.logs", map[string]any{"name": name, "logs": r}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// followFlushTimeout bounds FollowPluginLogs' wait for the server to
// have its subscription.
const followFlushTimeout = 10 * time.Second

// FollowPluginLogs hands each a plugin's kept lines that r asks for, then
// every new line as brokers publish it, until ctx is done (it then
// returns nil) or each fails. It subscribes to the team's subject
// (quarry.v1.logs.<team>.<plugin>), which a team's NATS user may
// subscribe to (docs/teams.md); a user who may not gets api.ErrForbidden
// at once. Lines heard live have no Seq.
func (c *Client) FollowPluginLogs(ctx context.Context, index, name string, r api.PluginLogsRequest, each func(api.PluginLogLine) error) error {
	first, err := c.PluginLogs(ctx, index, name, r)
	if err != nil {
		return err
	}
	live := make(chan *nats.Msg, 1024)
	sub, err := c.nc.ChanSubscribe(first.Subject, live)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	// The subscription reaches the server before the kept lines are read
	// again. A follow's ctx usually has no deadline (until Ctrl-C), which
	// FlushWithContext refuses: the flush gets one of its own.
	fctx, cancel := context.WithTimeout(ctx, followFlushTimeout)
	err = c.nc.FlushWithContext(fctx)
	cancel()
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", first.Subject, err)
	}
	if last := c.nc.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+first.Subject+`"`) {
		return api.Errorf(api.CodeForbidden, "this NATS user may not subscribe to %s (the index belongs to another team?)", first.Subject)
	}
	// Lines kept between the first read and the subscription.
	r2 := r
	r2.After, r2.Limit = first.Last, api.MaxPluginLogLines
	more, err := c.PluginLogs(ctx, index, name, r2)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, l := range append(first.Lines, more.Lines...) {
		if seen[l.ID] {
			continue
		}
		seen[l.ID] = true
		if err := each(l); err != nil {
			return err
		}
	}
	version := strings.TrimPrefix(r.Version, "sha256:")
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-live:
			var l api.PluginLogLine
			if json.Unmarshal(m.Data, &l) != nil || seen[l.ID] {
				continue
			}
			if !strings.HasPrefix(l.Version, version) && !strings.HasPrefix(version, l.Version) {
				continue
			}
			if err := each(l); err != nil {
				return err
			}
		}
	}
}
