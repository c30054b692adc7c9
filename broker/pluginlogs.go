package broker

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/plugins"
)

// Defaults of PluginLogsConfig.
const (
	DefaultPluginLogRate  = 100
	DefaultPluginLogBurst = 500
	DefaultPluginLogQueue = 4096
	// DefaultPluginLogProcessRate is how many of a team's plugin lines a
	// second reach the process's own log (the operator's stderr), in
	// bursts of up to DefaultPluginLogProcessBurst; the team's subject gets
	// the rest within DefaultPluginLogRate.
	DefaultPluginLogProcessRate  = 1
	DefaultPluginLogProcessBurst = 10
	// PluginLogProcessBytes is the most of one plugin line the process's
	// log shows; the subject keeps the whole line.
	PluginLogProcessBytes = 512
)

// PluginLogsConfig bounds what a broker sends of its plugins' lines.
type PluginLogsConfig struct {
	// Rate and Burst are the lines per second (and the burst) each team
	// may send from this broker (default DefaultPluginLogRate and
	// DefaultPluginLogBurst; Rate < 0: none at all). Lines over them are
	// dropped and counted.
	Rate  float64
	Burst int
	// Queue is how many lines wait for the publisher at most (default
	// DefaultPluginLogQueue); past it lines are dropped and counted.
	Queue int
	// Registerer gets the lines sent and dropped per team (nil: none).
	Registerer prometheus.Registerer
	// Logger, when set, also gets the lines taken (the publisher logs
	// them, not the plugin call), with their plugin, version, team and
	// request id, so that an operator following one request through the
	// process's log sees its plugins' lines; within ProcessRate per team,
	// each cut to PluginLogProcessBytes, so no team fills the operator's
	// log.
	Logger *slog.Logger
	// ProcessRate is the lines per second of each team that Logger gets
	// (default DefaultPluginLogProcessRate, in bursts of
	// DefaultPluginLogProcessBurst; negative: none).
	ProcessRate float64
}

// PluginLogs is a plugins.LogSink that publishes each team's plugin lines
// on quarry.v1.logs.<team>.<plugin> (kept by the QUARRY_PLUGIN_LOGS
// stream). A plugin call never waits for it: PluginLog takes a line only
// within the team's rate and while the queue has room, without blocking,
// and one goroutine (Run) encodes and publishes. Each line carries how many
// of the team's lines were dropped before it.
type PluginLogs struct {
	nc    *nats.Conn
	cfg   PluginLogsConfig
	id    string // this broker's, in each line's id
	count atomic.Uint64
	queue chan queuedLine

	mu    sync.Mutex
	teams map[string]*teamLog

	sent, dropped *prometheus.CounterVec
}

type teamLog struct {
	limiter *rate.Limiter
	dropped atomic.Int64 // since the last line queued
	// droppedTotal is the team's series of PluginLogs.dropped, looked
	// up once: a plugin may have thousands of lines a call dropped.
	droppedTotal prometheus.Counter
	// process holds the team to PluginLogsConfig.ProcessRate in the
	// process's log (used by the publisher alone).
	process *rate.Limiter
}

type queuedLine struct {
	line    plugins.LogLine
	dropped int64
}

// NewPluginLogs makes the sink; Run publishes what it takes.
func NewPluginLogs(nc *nats.Conn, cfg PluginLogsConfig) (*PluginLogs, error) {
	if cfg.Rate == 0 {
		cfg.Rate = DefaultPluginLogRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultPluginLogBurst
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultPluginLogQueue
	}
	if cfg.ProcessRate == 0 {
		cfg.ProcessRate = DefaultPluginLogProcessRate
	}
	l := &PluginLogs{nc: nc, cfg: cfg, id: requestid.New()[:8], queue: make(chan queuedLine, cfg.Queue), teams: map[string]*teamLog{},
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_plugin_log_lines_total",
			Help: "Plugin log lines this broker published, per team."}, []string{"team"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_plugin_log_lines_dropped_total",
			Help: "Plugin log lines this broker dropped (over the team's --plugin-log-rate, or a full queue), per team."}, []string{"team"})}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{l.sent, l.dropped} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

func (l *PluginLogs) team(name string) *teamLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.teams[name]
	if t == nil {
		lim := rate.NewLimiter(rate.Limit(l.cfg.Rate), l.cfg.Burst)
		if l.cfg.Rate < 0 {
			lim = rate.NewLimiter(0, 0)
		}
		process := rate.NewLimiter(rate.Limit(l.cfg.ProcessRate), DefaultPluginLogProcessBurst)
		if l.cfg.ProcessRate < 0 {
			process = rate.NewLimiter(0, 0)
		}
		t = &teamLog{limiter: lim, process: process, droppedTotal: l.dropped.WithLabelValues(name)}
		l.teams[name] = t
	}
	return t
}

// AdmitLog implements plugins.LogAdmitter: whether a line of team's
// would be taken now. A line refused here is counted as dropped and never
// built; one admitted still takes its token in PluginLog.
func (l *PluginLogs) AdmitLog(team string) bool {
	t := l.team(team)
	if t.limiter.Tokens() >= 1 {
		return true
	}
	t.dropped.Add(1)
	t.droppedTotal.Inc()
	return false
}

// LogsDropped implements plugins.LogDropCounter: n lines of team's
// dropped without AdmitLog being asked (their call's team was over its
// rate at an earlier line).
func (l *PluginLogs) LogsDropped(team string, n int) {
	t := l.team(team)
	t.dropped.Add(int64(n))
	t.droppedTotal.Add(float64(n))
}

// PluginLog takes a line if the team's rate and the queue allow, at once;
// otherwise it counts it dropped.
func (l *PluginLogs) PluginLog(line plugins.LogLine) {
	t := l.team(line.Team)
	if !t.limiter.Allow() {
		t.dropped.Add(1)
		t.droppedTotal.Inc()
		return
	}
	dropped := t.dropped.Swap(0)
	select {
	case l.queue <- queuedLine{line: line, dropped: dropped}:
	default:
		t.dropped.Add(dropped + 1) // still to be told, with this one
		t.droppedTotal.Inc()
	}
}

// Run publishes the queued lines until ctx is done.
func (l *PluginLogs) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case q := <-l.queue:
			l.publish(q)
		}
	}
}

func (l *PluginLogs) publish(q queuedLine) {
	in := q.line
	out := api.PluginLogLine{Time: in.Time.UTC(), ID: l.id + "-" + strconv.FormatUint(l.count.Add(1), 10), Team: in.Team,
		Plugin: in.Plugin, Version: in.Version, Level: in.Level, Source: in.Source, RequestID: in.RequestID,
		Message: in.Message, Dropped: q.dropped}
	if log := l.cfg.Logger; log != nil && l.team(in.Team).process.Allow() {
		msg := in.Message
		if len(msg) > PluginLogProcessBytes {
			msg = strings.ToValidUTF8(msg[:PluginLogProcessBytes], "") + "…"
		}
		lvl := slog.LevelInfo
		switch in.Level {
		case "debug":
			lvl = slog.LevelDebug
		case "warn":
			lvl = slog.LevelWarn
		case "error":
			lvl = slog.LevelError
		}
		log.Log(context.Background(), lvl, msg, "plugin", in.Plugin, "version", in.Version, "team", in.Team, "source", in.Source, "request_id", in.RequestID)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	// A core publish: buffered by the connection, never waiting for the
	// stream's acknowledgement.
	if l.nc.Publish(subject.PluginLogs(in.Team, in.Plugin), b) == nil {
		l.sent.WithLabelValues(in.Team).Inc()
	}
}

var _ plugins.LogSink = (*PluginLogs)(nil)
