package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/node"
)

// httpDoorFlags bound what the HTTP API's callers may cost the process
// and say which web pages and host names it answers (docs/operations.md,
// "The HTTP door's bounds").
type httpDoorFlags struct {
	maxConns, maxConnsPerClient, fdReserve int
	idleTimeout, bodyTimeout               time.Duration
	hosts, origins                         listFlag
}

func (f *httpDoorFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.maxConns, "http-max-conns", 0, fmt.Sprintf("most HTTP connections open at once; more are answered 503 and closed (default %d, or fewer so that --http-fd-reserve descriptors remain under the open-file limit)", httpapi.DefaultMaxConns))
	fs.IntVar(&f.maxConnsPerClient, "http-max-conns-per-client", httpapi.DefaultMaxConnsPerClient, "most HTTP connections open at once from one client address (an IPv4 address, an IPv6 /64); more are answered 429 and closed. Behind a proxy every client is the proxy's address: raise it to --http-max-conns")
	fs.IntVar(&f.fdReserve, "http-fd-reserve", 0, "file descriptors HTTP connections leave for NATS, JetStream, the indexes and plugins: --http-max-conns may not exceed the open-file limit (ulimit -n, raised to its hard limit at start) less this (default: half the limit)")
	fs.DurationVar(&f.idleTimeout, "http-idle-timeout", node.DefaultHTTPIdleTimeout, "close an HTTP connection kept alive with no request for this long")
	fs.DurationVar(&f.bodyTimeout, "http-body-timeout", httpapi.DefaultBodyTimeout, "how long the HTTP API waits for more of a request's body before it answers 400 and closes the connection")
	fs.Var(&f.hosts, "http-hosts", "names the HTTP API answers to (Host header, any port; comma-separated or repeated) besides localhost and loopback addresses: on loopback no other name is answered, against DNS rebinding; beyond loopback, when given, only these, localhost and IP addresses are")
	fs.Var(&f.origins, "http-origins", "web origins (scheme://host[:port], comma-separated or repeated) whose pages may call the HTTP API besides its own console; a request from any other page (its Origin header) is refused with 403")
}

// apply checks the flags and sets them on cfg.
func (f *httpDoorFlags) apply(cfg *node.Config) error {
	for _, c := range []struct {
		name string
		v    int
	}{{"http-max-conns", f.maxConns}, {"http-max-conns-per-client", f.maxConnsPerClient}, {"http-fd-reserve", f.fdReserve}} {
		if c.v < 0 {
			return fmt.Errorf("--%s must be 0 (the default) or positive, got %d", c.name, c.v)
		}
	}
	if f.maxConnsPerClient == 0 {
		return fmt.Errorf("--http-max-conns-per-client must be 1 or more, got 0")
	}
	for _, t := range []struct {
		name string
		v    time.Duration
	}{{"http-idle-timeout", f.idleTimeout}, {"http-body-timeout", f.bodyTimeout}} {
		if t.v <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", t.name, t.v)
		}
	}
	for _, h := range f.hosts {
		if _, err := httpapi.CheckHost(h); err != nil {
			return fmt.Errorf("--http-hosts: %w", err)
		}
	}
	for _, o := range f.origins {
		if _, err := httpapi.CheckOrigin(o); err != nil {
			return fmt.Errorf("--http-origins: %w", err)
		}
	}
	cfg.HTTPMaxConns, cfg.HTTPMaxConnsPerClient, cfg.HTTPFDReserve = f.maxConns, f.maxConnsPerClient, f.fdReserve
	cfg.HTTPIdleTimeout, cfg.HTTPBodyTimeout = f.idleTimeout, f.bodyTimeout
	cfg.HTTPHosts, cfg.HTTPOrigins = f.hosts, f.origins
	return nil
}

// explain names the flags to change in a start-up failure of the HTTP
// door's settings.
func (f *httpDoorFlags) explain(err error) error {
	var se *node.SettingError
	if !errors.As(err, &se) {
		return err
	}
	flags := map[string]string{
		node.SettingHTTPConns:   "--http-max-conns, --http-max-conns-per-client, --http-fd-reserve",
		node.SettingHTTPHosts:   "--http-hosts",
		node.SettingHTTPOrigins: "--http-origins",
	}[se.Setting]
	if flags == "" {
		return err
	}
	return &node.SettingError{Setting: se.Setting, Err: fmt.Errorf("%w (change %s)", se.Err, flags)}
}

// listFlag is a flag of comma-separated values that may be repeated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Type() string { return "list" }

func (l *listFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}
