package node

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/registry"
)

// Settings a SettingError names: the fields of Config a person changes to
// get past a start-up failure. cmd/quarry maps each to its flag.
const (
	SettingDataDir     = "DataDir"
	SettingNATSPort    = "NATSPort"
	SettingNATSURL     = "NATSURL"
	SettingHTTPAddr    = "HTTPAddr"
	SettingMetricsAddr = "MetricsAddr"
	SettingPipelines   = "Pipelines"
	// SettingHTTPConns covers HTTPMaxConns, HTTPMaxConnsPerClient and
	// HTTPFDReserve: the HTTP API's connection caps and the descriptors
	// they leave.
	SettingHTTPConns   = "HTTPMaxConns"
	SettingHTTPHosts   = "HTTPHosts"
	SettingHTTPOrigins = "HTTPOrigins"
)

// SettingError is a start-up failure that one setting causes and a change
// of that setting fixes: a port in use, a data directory that cannot be
// used or that another process holds, NATS out of reach, a bad pipeline
// file. Its message is one line naming the cause; Setting names the Config
// field to change.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

func settingErr(setting string, format string, args ...any) error {
	return &SettingError{Setting: setting, Err: fmt.Errorf(format, args...)}
}

// listen opens a TCP listener for setting, saying plainly when the address
// is taken.
func listen(setting, what, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, settingErr(setting, "%s address %s is already in use (another quarry running?)", what, addr)
	case errors.Is(err, syscall.EACCES):
		return nil, settingErr(setting, "%s address %s: permission denied (ports below 1024 need privileges)", what, addr)
	default:
		return nil, settingErr(setting, "%s address %s: %v", what, addr, unwrapOp(err))
	}
}

// checkPortFree reports a settingErr when host:port cannot be listened on:
// the embedded NATS server would otherwise only say it never got ready.
func checkPortFree(setting, what, host string, port int) error {
	if port < 0 {
		return nil // a free port is picked
	}
	if port == 0 {
		port = 4222
	}
	ln, err := listen(setting, what, net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return ln.Close()
}

// unwrapOp drops the "listen tcp …:" prefix of a net.OpError, whose
// address the caller's message already names.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// dirLock holds a data directory for one process.
type dirLock struct {
	f *os.File
}

// lockFileName is the lock file in a locked data directory; it holds who
// holds it, for the message the next process gets.
const lockFileName = "LOCK"

// lockDataDir creates dir if needed, checks that it can be written, and
// locks it (an advisory lock the kernel drops when the process dies, so a
// crash leaves no stale lock). A directory another process holds is
// refused with that process's role and pid: two roles sharing a directory
// would delete each other's shards.
func lockDataDir(dir, role string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, settingErr(SettingDataDir, "data directory %s cannot be created: %v", dir, unwrapPath(err))
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, settingErr(SettingDataDir, "data directory %s is not writable: %v", dir, unwrapPath(err))
	}
	if err := flock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return nil, settingErr(SettingDataDir, "data directory %s is in use by %s; give each process its own data directory", dir, who)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("quarry %s (pid %d on %s, since %s)\n", role, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		f.Close()
		return nil, settingErr(SettingDataDir, "data directory %s is not writable: %v", dir, unwrapPath(err))
	}
	return &dirLock{f: f}, nil
}

// release unlocks the directory. The lock file stays (removing it would
// race with a process locking it).
func (l *dirLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
	}
}

// unwrapPath drops the path of a *os.PathError, which the caller's
// message already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DefaultHTTPIdleTimeout is Config.HTTPIdleTimeout's default: short, so
// that connections kept alive and left idle do not hold descriptors long.
const DefaultHTTPIdleTimeout = 30 * time.Second

// checkHTTPDoor checks the HTTP API's connection caps, hosts and origins
// and fills in the caps' defaults. It raises the process's soft limit on
// open files to the hard one (Go does so at start on Linux, quietly; this
// says so in the log) and sizes the connection cap so that HTTPFDReserve
// descriptors remain for NATS, JetStream and the indexes.
func checkHTTPDoor(cfg *Config) error {
	if cfg.HTTPMaxConns < 0 || cfg.HTTPMaxConnsPerClient < 0 || cfg.HTTPFDReserve < 0 {
		return settingErr(SettingHTTPConns, "HTTP connection caps and the descriptor reserve must be 0 (the default) or positive, got %d in total, %d per client and a reserve of %d", cfg.HTTPMaxConns, cfg.HTTPMaxConnsPerClient, cfg.HTTPFDReserve)
	}
	limit, raised, err := httpapi.RaiseFileLimit()
	if err != nil {
		cfg.Logger.Warn("cannot read the open-file limit; the HTTP connection cap is not sized to it", "err", err)
	}
	if cfg.HTTPAddr == "" {
		cfg.Logger.Debug("open files", "limit", limit, "raised_to_hard_limit", raised)
		return nil
	}
	if err := fitConns(cfg, min(limit, math.MaxInt32)); err != nil {
		return err
	}
	if _, err := httpapi.NewDoor(httpapi.DoorConfig{Hosts: cfg.HTTPHosts}); err != nil {
		return settingErr(SettingHTTPHosts, "%v", err)
	}
	if _, err := httpapi.NewDoor(httpapi.DoorConfig{Origins: cfg.HTTPOrigins}); err != nil {
		return settingErr(SettingHTTPOrigins, "%v", err)
	}
	cfg.fileLimit, cfg.fileLimitRaised = limit, raised
	return nil
}

// checkGate fills in the relevance gate's bounds, refusing a negative
// one and a wait the admin request's minute would cut short.
func checkGate(cfg *Config) error {
	if cfg.GateTimeout < 0 {
		return fmt.Errorf("node: the relevance gate's timeout (quarry serve --gate-timeout) must be 0 (the default, %s) or positive, got %s", registry.DefaultGateTimeout, cfg.GateTimeout)
	}
	if cfg.GateWait < 0 || cfg.GateWait >= registry.RequestTimeout {
		return fmt.Errorf("node: the relevance gate's wait (quarry serve --gate-wait) must be 0 (the default, %s) or positive and under %s, an admin request's deadline, got %s", registry.DefaultGateWait, registry.RequestTimeout, cfg.GateWait)
	}
	cfg.GateTimeout, cfg.GateWait = cmp.Or(cfg.GateTimeout, registry.DefaultGateTimeout), cmp.Or(cfg.GateWait, registry.DefaultGateWait)
	return nil
}

// fitConns fills in the HTTP connection caps and the descriptor reserve
// under limit, the soft limit on open files (0: unknown, no reserve
// kept), refusing caps that do not fit.
func fitConns(cfg *Config, limit uint64) error {
	cfg.HTTPMaxConnsPerClient = cmp.Or(cfg.HTTPMaxConnsPerClient, httpapi.DefaultMaxConnsPerClient)
	if limit == 0 {
		cfg.HTTPMaxConns = cmp.Or(cfg.HTTPMaxConns, httpapi.DefaultMaxConns)
		cfg.HTTPMaxConnsPerClient = min(cfg.HTTPMaxConnsPerClient, cfg.HTTPMaxConns)
		return nil
	}
	lim := int(limit)
	cfg.HTTPFDReserve = cmp.Or(cfg.HTTPFDReserve, lim/2)
	room := lim - cfg.HTTPFDReserve
	switch {
	case room < 1:
		return settingErr(SettingHTTPConns, "a reserve of %d file descriptors leaves none for HTTP connections under the open-file limit of %d: lower the reserve or raise the limit (ulimit -n, systemd LimitNOFILE=)", cfg.HTTPFDReserve, lim)
	case cfg.HTTPMaxConns == 0:
		cfg.HTTPMaxConns = min(httpapi.DefaultMaxConns, room)
	case cfg.HTTPMaxConns > room:
		return settingErr(SettingHTTPConns, "%d HTTP connections and a reserve of %d file descriptors need %d open files, over the limit of %d: lower either or raise the limit (ulimit -n, systemd LimitNOFILE=)", cfg.HTTPMaxConns, cfg.HTTPFDReserve, cfg.HTTPMaxConns+cfg.HTTPFDReserve, lim)
	}
	cfg.HTTPMaxConnsPerClient = min(cfg.HTTPMaxConnsPerClient, cfg.HTTPMaxConns)
	return nil
}

// httpDoor wraps the HTTP API's listener in its connection caps and makes
// its door (Host, Origin), registering their metrics.
func (n *Node) httpDoor(ln net.Listener) (*httpapi.Listener, *httpapi.Door, error) {
	cfg := n.cfg
	limited, err := httpapi.LimitListener(ln, httpapi.ConnLimits{Total: cfg.HTTPMaxConns, PerClient: cfg.HTTPMaxConnsPerClient}, cfg.Logger)
	if err != nil {
		return nil, nil, settingErr(SettingHTTPConns, "%v", err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	door, err := httpapi.NewDoor(httpapi.DoorConfig{Loopback: tcp != nil && tcp.IP.IsLoopback(), Hosts: cfg.HTTPHosts, Origins: cfg.HTTPOrigins})
	if err != nil {
		return nil, nil, settingErr(SettingHTTPOrigins, "%v", err)
	}
	for _, c := range append(limited.Collectors(), door.Collectors()...) {
		if err := n.Metrics.Register(c); err != nil {
			return nil, nil, fmt.Errorf("HTTP connection metrics: %w", err)
		}
	}
	// Said once the node has started this far: a start-up failure is one
	// line on its own.
	cfg.Logger.Info("open files and HTTP connections", "open_file_limit", cfg.fileLimit, "raised_to_hard_limit", cfg.fileLimitRaised,
		"http_max_conns", cfg.HTTPMaxConns, "http_max_conns_per_client", cfg.HTTPMaxConnsPerClient, "fds_reserved_for_nats_jetstream_indexes", cfg.HTTPFDReserve,
		"loopback", tcp != nil && tcp.IP.IsLoopback(), "http_hosts", cfg.HTTPHosts, "http_origins", cfg.HTTPOrigins)
	return limited, door, nil
}
