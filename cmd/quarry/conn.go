package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/trace"
)

// natsFlags are the connection flags every networked command takes.
type natsFlags struct {
	url, user, password, token, creds, nkey string
	tlsCA, tlsCert, tlsKey                  string
	inboxPrefix                             string
	timeout                                 time.Duration
}

func (f *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "nats", envOr("QUARRY_NATS", "nats://127.0.0.1:4222"), "NATS server URL(s), comma-separated (env QUARRY_NATS)")
	fs.StringVar(&f.user, "user", "", "NATS user")
	fs.StringVar(&f.password, "password", os.Getenv("QUARRY_NATS_PASSWORD"), "NATS password (env QUARRY_NATS_PASSWORD)")
	fs.StringVar(&f.token, "token", os.Getenv("QUARRY_NATS_TOKEN"), "NATS auth token (env QUARRY_NATS_TOKEN)")
	fs.StringVar(&f.creds, "creds", "", "NATS credentials file")
	fs.StringVar(&f.nkey, "nkey", "", "NATS nkey seed file")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "CA certificate to verify the NATS server")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "client certificate for NATS TLS")
	fs.StringVar(&f.tlsKey, "tls-key", "", "client key for NATS TLS")
	fs.StringVar(&f.inboxPrefix, "inbox-prefix", os.Getenv("QUARRY_INBOX_PREFIX"), "subject prefix of reply inboxes, for NATS users allowed to subscribe only under it, e.g. _INBOX_teama (env QUARRY_INBOX_PREFIX)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for NATS and for answers")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// options turns the flags into connection options.
func (f *natsFlags) options() ([]nats.Option, error) {
	opts := []nats.Option{nats.Timeout(f.timeout)}
	if f.user != "" {
		opts = append(opts, nats.UserInfo(f.user, f.password))
	}
	if f.token != "" {
		opts = append(opts, nats.Token(f.token))
	}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(f.nkey)
		if err != nil {
			return nil, fmt.Errorf("nkey %s: %w", f.nkey, err)
		}
		opts = append(opts, o)
	}
	if f.inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(f.inboxPrefix))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		opts = append(opts, nats.ClientCert(f.tlsCert, f.tlsKey))
	}
	return opts, nil
}

// connect opens a NATS connection and a client on it.
func (f *natsFlags) connect(ctx context.Context) (*nats.Conn, *client.Client, error) {
	opts, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(f.url, append(opts, nats.Name("quarry-cli"))...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w (is `quarry serve` running? One on another port: --nats URL or QUARRY_NATS)", f.url, err)
	}
	c, err := client.New(ctx, nc, client.Options{RequestTimeout: f.timeout})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, c, nil
}

// runtimeFlags are the process knobs of long-running roles.
type runtimeFlags struct {
	logLevel, logFormat string
	memLimit            string
	gcPercent           int
	otlpEndpoint        string
	traceSample         float64
}

func (f *runtimeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.memLimit, "gomemlimit", "", "soft memory limit for the Go runtime, e.g. 2GiB (default: GOMEMLIMIT or none)")
	fs.IntVar(&f.gcPercent, "gogc", 0, "GOGC percentage (default: GOGC or 100)")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", os.Getenv("QUARRY_OTLP_ENDPOINT"), "send OpenTelemetry spans to this OTLP/HTTP collector, e.g. http://localhost:4318 (env QUARRY_OTLP_ENDPOINT; default: no spans)")
	fs.Float64Var(&f.traceSample, "trace-sample", 1, "share of requests traced when --otlp-endpoint is set, 0-1")
}

// tracing starts exporting spans when --otlp-endpoint is set and returns
// the function that flushes them at exit.
func (f *runtimeFlags) tracing(ctx context.Context, service string) (func(), error) {
	if f.otlpEndpoint != "" && (f.traceSample <= 0 || f.traceSample > 1) {
		return nil, fmt.Errorf("--trace-sample must be above 0 and at most 1, got %g", f.traceSample)
	}
	shutdown, err := trace.Setup(ctx, trace.Config{Endpoint: f.otlpEndpoint, SampleRatio: f.traceSample, Service: service})
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

// apply sets the runtime knobs and returns the logger.
func (f *runtimeFlags) apply() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	switch f.logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(os.Stderr, hopts))
	case "json":
		log = slog.New(slog.NewJSONHandler(os.Stderr, hopts))
	default:
		return nil, fmt.Errorf("--log-format must be text or json, got %q", f.logFormat)
	}
	slog.SetDefault(log)
	if f.memLimit != "" {
		n, err := parseBytes(f.memLimit)
		if err != nil {
			return nil, fmt.Errorf("--gomemlimit: %w", err)
		}
		debug.SetMemoryLimit(n)
	}
	if f.gcPercent != 0 {
		debug.SetGCPercent(f.gcPercent)
	}
	return log, nil
}

// parseBytes parses sizes like 512MiB, 2GiB, 1GB or a plain byte count.
func parseBytes(s string) (int64, error) {
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
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
