package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/httpapi"
)

// pluginLogsCmd prints a plugin's log lines: the kept ones, then with
// --follow every new one until interrupted.
func pluginLogsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("logs INDEX NAME", "print the plugin's log lines (log import, stdout, stderr) with their request ids",
		"Prints the lines a plugin wrote while brokers ran it (its log import, stdout and stderr),\n"+
			"oldest first, each with its time, level, version and the request it served. Brokers keep\n"+
			"the last 1,000 lines per team and plugin for a day, and drop lines over a team's\n"+
			"--plugin-log-rate (a line says how many were dropped before it).", 2, 2)
	fs := cmd.Flags()
	follow := fs.Bool("follow", false, "then print new lines as they come, until interrupted")
	version := fs.String("version", "", "only this version's lines (a digest prefix)")
	since := fs.String("since", "", "only lines since then: a duration back from now (10m) or an RFC 3339 time")
	limit := fs.Int("limit", 100, fmt.Sprintf("print at most the last N kept lines (1-%d)", api.MaxPluginLogLines))
	jsonOut := fs.Bool("json", false, "print JSON lines")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *limit < 1 || *limit > api.MaxPluginLogLines {
			return api.BadRequest("--limit %d: want 1-%d", *limit, api.MaxPluginLogLines)
		}
		req := api.PluginLogsRequest{Version: *version, Limit: *limit}
		var err error
		if *since != "" {
			if req.Since, err = httpapi.ParseSince(*since, time.Now()); err != nil {
				return fmt.Errorf("--since: %w", err)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		print := func(l api.PluginLogLine) error { return printLogLine(e.stdout, l, *jsonOut) }
		if !*follow {
			logs, err := c.PluginLogs(ctx, pos[0], pos[1], req)
			if err != nil {
				return err
			}
			for _, l := range logs.Lines {
				print(l)
			}
			if len(logs.Lines) == 0 {
				fmt.Fprintf(e.stderr, "no lines kept for plugin %s of team %s (%s) that match\n", logs.Plugin, logs.Team, logs.Subject)
			}
			return nil
		}
		// Until ctx ends: on Ctrl-C (main).
		return c.FollowPluginLogs(ctx, pos[0], pos[1], req, print)
	}
	return cmd
}

// printLogLine prints one line: time, level, plugin@version, request id,
// message; or the line as JSON.
func printLogLine(w io.Writer, l api.PluginLogLine, asJSON bool) error {
	if asJSON {
		b, _ := json.Marshal(l)
		_, err := fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if l.Dropped > 0 {
		fmt.Fprintf(w, "… %d lines dropped (over the team's rate)\n", l.Dropped)
	}
	req := l.RequestID
	if req == "" {
		req = "-"
	}
	src := ""
	if l.Source != "log" {
		src = " [" + l.Source + "]"
	}
	_, err := fmt.Fprintf(w, "%s %-5s %s@%s req=%s%s %s\n", l.Time.Format("2006-01-02T15:04:05.000Z07:00"), l.Level, l.Plugin, l.Version, req, src, l.Message)
	return err
}
