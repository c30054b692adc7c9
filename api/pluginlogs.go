package api

import "time"

// PluginLogLine is one line a plugin wrote (its log import, stdout or
// stderr) while a broker ran it, as published on the team's subject
// quarry.v1.logs.<team>.<plugin> and kept for a while
// (docs/plugins.md, "Logs").
type PluginLogLine struct {
	// Seq is the line's sequence in the kept lines (0 on a line heard
	// live): ask for lines after it to read on.
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time"`
	// ID is unique per line: the broker's id and its count of lines.
	ID     string `json:"id"`
	Team   string `json:"team"`
	Plugin string `json:"plugin"`
	// Version is the short digest of the plugin version (ShortDigest).
	Version string `json:"version"`
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Source is "log" (the log import), "stdout" or "stderr".
	Source string `json:"source"`
	// RequestID is the search request the call served, if any.
	RequestID string `json:"request_id,omitempty"`
	Message   string `json:"message"`
	// Dropped counts the team's lines this broker dropped since the line
	// before this one it sent (over the team's rate, or a full queue).
	Dropped int64 `json:"dropped,omitempty"`
}

// PluginLogs answers the admin API's plugin.logs: the kept lines of a
// plugin, oldest first.
type PluginLogs struct {
	Index  string          `json:"index"`
	Team   string          `json:"team"`
	Plugin string          `json:"plugin"`
	Lines  []PluginLogLine `json:"lines"`
	// Subject is where new lines are published, for following them.
	Subject string `json:"subject"`
	// Last is the sequence of the last kept line (of any version), for
	// reading on with After.
	Last uint64 `json:"last"`
}

// PluginLogsRequest asks for a plugin's kept lines (zero fields: no
// filter).
type PluginLogsRequest struct {
	// Version keeps the lines of versions whose digest starts with it.
	Version string `json:"version,omitempty"`
	// Since keeps lines written at or after it.
	Since time.Time `json:"since,omitzero"`
	// After keeps lines after this sequence (PluginLogs.Last).
	After uint64 `json:"after,omitempty"`
	// Limit keeps the last Limit lines (default 100, at most
	// MaxPluginLogLines).
	Limit int `json:"limit,omitempty"`
}

// MaxPluginLogLines is the most lines one plugin.logs answer holds, and
// the most kept per team and plugin.
const MaxPluginLogLines = 1000
