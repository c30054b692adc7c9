package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/trace/traceexport"
)

// ErrUsage reports bad command-line use, already explained on the flag
// set's output.
var ErrUsage = errors.New("usage")

// NewFlagSet makes the flag set of `quarry NAME` (quarry-bench's: quarry
// bench runs it), with a usage line naming its positional arguments
// (args) and a paragraph about it.
func NewFlagSet(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("quarry "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: quarry %s [flags] %s\n\n%s\n\nFlags:\n", name, args, about)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses flags, allowing them after positional arguments, and
// checks the positional argument count (maxArgs negative: no most). It
// returns flag.ErrHelp for -h and ErrUsage for anything else wrong.
func Parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, ErrUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
		fmt.Fprintf(fs.Output(), "%s: wrong number of arguments\n", fs.Name())
		fs.Usage()
		return nil, ErrUsage
	}
	return pos, nil
}

// Flags is where the flags below are defined: a *flag.FlagSet
// (quarry-bench) or a *pflag.FlagSet (quarry, on cobra), whose methods of
// these names do the same.
type Flags interface {
	StringVar(p *string, name, value, usage string)
	IntVar(p *int, name string, value int, usage string)
	Float64Var(p *float64, name string, value float64, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
}

// Runtime are the process knobs of a long-running command.
type Runtime struct {
	LogLevel, LogFormat string
	MemLimit            string
	GCPercent           int
	OTLPEndpoint        string
	TraceSample         float64
}

// Register adds the process flags to fs, with f's fields as their
// destinations.
func (f *Runtime) Register(fs Flags) {
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.MemLimit, "gomemlimit", "", "soft memory limit for the Go runtime, e.g. 2GiB (default: GOMEMLIMIT or none)")
	fs.IntVar(&f.GCPercent, "gogc", 0, "GOGC percentage (default: GOGC or 100)")
	fs.StringVar(&f.OTLPEndpoint, "otlp-endpoint", os.Getenv("QUARRY_OTLP_ENDPOINT"), "send OpenTelemetry spans to this OTLP/HTTP collector, e.g. http://localhost:4318 (env QUARRY_OTLP_ENDPOINT; default: no spans)")
	fs.Float64Var(&f.TraceSample, "trace-sample", 1, "share of requests traced when --otlp-endpoint is set, 0-1")
}

// Tracing starts exporting spans when --otlp-endpoint is set and returns
// the function that flushes them at exit.
func (f *Runtime) Tracing(ctx context.Context, service string) (func(), error) {
	if f.OTLPEndpoint != "" && (f.TraceSample <= 0 || f.TraceSample > 1) {
		return nil, fmt.Errorf("--trace-sample must be above 0 and at most 1, got %g", f.TraceSample)
	}
	shutdown, err := traceexport.Setup(ctx, traceexport.Config{Endpoint: f.OTLPEndpoint, SampleRatio: f.TraceSample, Service: service})
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %w", err)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			slog.Warn("flush spans", "err", err)
		}
	}, nil
}

// Apply sets the runtime knobs, makes the logger the default one, and
// returns it.
func (f *Runtime) Apply() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	switch f.LogFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(os.Stderr, hopts))
	case "json":
		log = slog.New(slog.NewJSONHandler(os.Stderr, hopts))
	default:
		return nil, fmt.Errorf("--log-format must be text or json, got %q", f.LogFormat)
	}
	slog.SetDefault(log)
	if f.MemLimit != "" {
		n, err := ParseBytes(f.MemLimit)
		if err != nil {
			return nil, fmt.Errorf("--gomemlimit: %w", err)
		}
		debug.SetMemoryLimit(n)
	}
	if f.GCPercent != 0 {
		debug.SetGCPercent(f.GCPercent)
	}
	return log, nil
}

// ParseBytes parses sizes like 512MiB, 2GiB, 1GB or a plain byte count.
func ParseBytes(in string) (int64, error) {
	s := in
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad size %q: want a positive whole number of bytes, KiB, MiB, GiB, KB, MB or GB, such as 512MiB", in)
	}
	return n * mult, nil
}

// RegisterWrites adds the flags pacing how replicas apply updates, with
// w's fields as their destinations. Call it once per flag set: one set of
// these flags serves the indexer and the searcher.
func RegisterWrites(fs Flags, w *shard.WriteOptions) {
	fs.DurationVar(&w.ApplyInterval, "apply-interval", shard.DefaultApplyInterval, "searchers: least time between two batches of updates applied to a shard: updates arriving sooner wait and are applied together (fewer segments for searches to read and merge; each waits at most this long); negative: apply as they arrive")
	fs.DurationVar(&w.PersistNap, "persist-nap", shard.DefaultPersistNap, "how long fresh in-memory segments wait before scorch writes them as one file, merged in memory (negative: no nap, bleve's default)")
	fs.IntVar(&w.MergeFloor, "merge-floor", shard.DefaultMergeFloor, "scorch merge planner's floor segment size, in documents: small segments merge with small ones instead of into the shard's large ones (negative: bleve's default, 2000)")
	fs.IntVar(&w.SegmentsPerTier, "segments-per-tier", shard.DefaultSegmentsPerTier, "scorch merge planner's segments of about one size a shard keeps before they are merged: each search visits every segment (negative: bleve's default, 10)")
	fs.IntVar(&w.FreshSegments, "fresh-segments", shard.DefaultFreshSegments, "most fresh in-memory segments of a shard searches visit: a batch of updates that would leave more also indexes the documents of the earlier ones again, so its one segment replaces them (negative: no folding)")
}
