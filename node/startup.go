package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
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
