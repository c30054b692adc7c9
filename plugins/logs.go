package plugins

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// LogLine is one line a plugin wrote: a call of the log import, or a line
// of its stdout or stderr.
type LogLine struct {
	Time time.Time
	// Team is the runtime's (Config.Team); Plugin and Version its Spec's.
	Team, Plugin, Version string
	// Level is debug, info, warn or error (stdout is info, stderr warn).
	Level string
	// Source is "log" (the log import), "stdout" or "stderr".
	Source string
	// RequestID is the request the call served (internal/trace), if any:
	// empty while an instance starts.
	RequestID string
	// Message is the line, at most 4 KiB, without its newline.
	Message string
}

// LogSink receives the lines of a runtime's plugins (Config.LogSink). It
// is called on the goroutine of the plugin call, inside it: it must not
// block, and should drop lines rather than wait (the broker's sink sends
// them to NATS from a goroutine of its own, with a rate per team).
type LogSink interface {
	PluginLog(LogLine)
}

// LogAdmitter is a LogSink that can tell, before a line is built, that it
// would drop it (its team is over its rate): the host then neither copies
// the line out of the guest's memory nor allocates for it, so a plugin
// that logs thousands of lines a call costs its team the calls alone, and
// the process no garbage. PluginLog still decides for the lines admitted.
type LogAdmitter interface {
	// AdmitLog reports whether PluginLog would take a line of team's now.
	// It must be cheap and not block.
	AdmitLog(team string) bool
}

// LogDropCounter is a LogAdmitter told of lines it was not asked about:
// once AdmitLog refuses a line of a call's team, the call's later lines
// are dropped without asking, and their number is told when the call
// ends.
type LogDropCounter interface {
	// LogsDropped counts n lines of team's as dropped.
	LogsDropped(team string, n int)
}

// admitLog reports whether the runtime's sink may take a line of its
// team's now (true for a sink that does not say).
func (r *Runtime) admitLog() bool {
	a, ok := r.cfg.LogSink.(LogAdmitter)
	return !ok || a.AdmitLog(r.cfg.Team)
}

// levelNames are the ABI's log levels by number (abi.LevelDebug…).
var levelNames = [...]string{"debug", "info", "warn", "error"}

func levelName(l uint32) string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "info"
}

// lineLogger turns a guest's stdout or stderr into log lines tagged with
// the plugin (and, with a LogSink, the call's request id), capped per
// line. Each instance has its own pair: an instance serves one call at a
// time, so reqID is the request of the call writing.
type lineLogger struct {
	p      *Plugin
	g      *guest // the instance's: a call over its team's log rate (guest.logsShut)
	source string // stdout or stderr

	mu    sync.Mutex
	buf   bytes.Buffer
	reqID string
}

func (l *lineLogger) setRequest(id string) {
	l.mu.Lock()
	l.reqID = id
	l.mu.Unlock()
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p.rt.cfg.LogSink != nil && (l.g.logsShut || !l.p.rt.admitLog()) {
		// Dropped, a write at a time as the sink would: never copied.
		// Once one is, the call's later writes are not asked for
		// (guest.logsShut), as with the log import.
		if l.g.logsShut {
			l.g.logsDropped++
		}
		l.g.logsShut = true
		l.buf.Reset()
		return len(b), nil
	}
	l.buf.Write(b)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			if l.buf.Len() == 0 && len(line) > 0 && len(line) < maxLogMessage {
				l.buf.WriteString(line) // keep the partial line
			} else if len(line) > 0 {
				l.emit(line[:min(len(line), maxLogMessage)])
			}
			return len(b), nil
		}
		line = strings.TrimRight(line, "\n")
		l.emit(line[:min(len(line), maxLogMessage)])
	}
}

func (l *lineLogger) emit(line string) {
	level := "info"
	if l.source == "stderr" {
		level = "warn"
	}
	if sink := l.p.rt.cfg.LogSink; sink != nil {
		sink.PluginLog(LogLine{Time: time.Now(), Team: l.p.rt.cfg.Team, Plugin: l.p.spec.Name, Version: l.p.spec.Version,
			Level: level, Source: l.source, RequestID: l.reqID, Message: line})
		return
	}
	if l.reqID != "" {
		l.p.log.Info(line, "source", l.source, "request_id", l.reqID)
		return
	}
	l.p.log.Info(line, "source", l.source)
}
