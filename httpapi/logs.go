package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// pluginLogs answers GET …/plugins/{name}/logs?version=&since=&after=&limit=:
// the admin API's plugin.logs. since is a duration back from now ("10m")
// or an RFC 3339 time; after a sequence (the last answer's "last"), for
// reading on.
func (h *handler) pluginLogs(w http.ResponseWriter, r *http.Request) {
	req, err := logsRequest(r, time.Now())
	if err != nil {
		h.fail(w, err)
		return
	}
	logs, err := h.c.PluginLogs(r.Context(), r.PathValue("index"), r.PathValue("name"), req)
	h.reply(w, logs, err)
}

// logsRequest reads plugin.logs' query parameters.
func logsRequest(r *http.Request, now time.Time) (api.PluginLogsRequest, error) {
	q := r.URL.Query()
	req := api.PluginLogsRequest{Version: q.Get("version")}
	if s := q.Get("since"); s != "" {
		since, err := ParseSince(s, now)
		if err != nil {
			return req, err
		}
		req.Since = since
	}
	for _, p := range []struct {
		name string
		set  func(uint64)
	}{{"after", func(v uint64) { req.After = v }}, {"limit", func(v uint64) { req.Limit = int(min(v, 1<<30)) }}} {
		if s := q.Get(p.name); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return req, api.BadRequest("query parameter %s=%q: want a whole number", p.name, s)
			}
			p.set(v)
		}
	}
	return req, nil
}

// ParseSince reads a "since" value: a duration back from now ("10m",
// "1h30m") or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, api.BadRequest("since %q: want a duration back from now (10m) or an RFC 3339 time, not a negative duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, api.BadRequest("since %q: want a duration back from now (10m, 1h) or an RFC 3339 time (2026-12-01T10:00:00Z)", s)
	}
	return t, nil
}
