//go:build long

package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// deploy is examples/deploy, the files the test runs.
var deploy = filepath.Join(root, "examples", "deploy")

// binaries are the nats-server and quarry the test builds.
type binaries struct{ dir string }

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// build builds nats-server at the version go.mod requires (the one
// Quarry embeds) and quarry, at once, into a temporary directory. A build
// that fails fails the test: the test needs both and never skips.
func build(t *testing.T) binaries {
	t.Helper()
	b := binaries{dir: t.TempDir()}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, pkg := range []string{"github.com/nats-io/nats-server/v2", "./cmd/quarry"} {
		out := b.path([]string{"nats-server", "quarry"}[i])
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Dir = root
			if msg, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// unit is what the test takes from a systemd unit file: its ExecStart=
// command line and its Environment= values.
type unit struct {
	path string
	env  map[string]string
	exec []string
}

// readUnit reads a unit of examples/deploy/systemd.
func readUnit(t *testing.T, name string) unit {
	t.Helper()
	path := filepath.Join(deploy, "systemd", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{path: path, env: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			k, val, _ := strings.Cut(v, "=")
			u.env[k] = val
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			u.exec = strings.Fields(v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(u.exec) == 0 {
		t.Fatalf("%s has no ExecStart=", path)
	}
	return u
}

// command is the unit's command line as the test runs it (see
// examples/deploy/README.md): %i is instance, ${VAR} comes from set or
// else the unit's Environment=, binaries from b, /etc/quarry/nats.conf is
// examples/deploy/nats/nats.conf. It returns the arguments and the
// environment to add to the process's.
func (u unit) command(b binaries, instance string, set map[string]string) (argv, env []string) {
	vars := map[string]string{}
	for k, v := range u.env {
		vars[k] = strings.ReplaceAll(v, "%i", instance)
	}
	for k, v := range set {
		vars[k] = v
	}
	for _, f := range u.exec {
		f = strings.ReplaceAll(f, "%i", instance)
		f = os.Expand(f, func(k string) string { return vars[k] })
		if bin, ok := strings.CutPrefix(f, "/usr/local/bin/"); ok {
			f = b.path(bin)
		}
		if f == "/etc/quarry/nats.conf" {
			f = filepath.Join(deploy, "nats", "nats.conf")
		}
		argv = append(argv, f)
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return argv, env
}

// proc is a process the test runs: a NATS member or a role.
type proc struct {
	t    *testing.T
	name string
	argv []string
	env  []string
	logs string // its stdout and stderr, appended at each start

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
}

func newProc(t *testing.T, name string, argv, env []string) *proc {
	p := &proc{t: t, name: name, argv: argv, env: env, logs: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.logs)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("%s (%s), the end of its output:\n%s", p.name, strings.Join(p.argv, " "), b)
		}
	})
	return p
}

// start starts the process (again).
func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := os.OpenFile(p.logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	fmt.Fprintf(out, "--- %s start\n", time.Now().Format(time.TimeOnly))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		out.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
}

// kill sends SIGKILL, as when a machine dies, and waits for the process
// to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// pid is the running process's id.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// exited waits up to d for the process to exit by itself.
func (p *proc) exited(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// member is a NATS member run from examples/deploy/nats/nats.conf.
type member struct {
	name                        string
	port, clusterPort, httpPort int
	*proc
}

func (m *member) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", m.port) }

// monitor reads a monitoring endpoint of m's into v.
func (m *member) monitor(path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", m.httpPort, path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", m.name, path, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", m.name, path, resp.Status, strings.TrimSpace(buf.String()))
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(buf.Bytes(), v)
}

// healthy reports whether m answers /healthz with 200: JetStream on, the
// member current with the meta leader and with every stream it holds.
func (m *member) healthy() bool { return m.monitor("/healthz", nil) == nil }

// metaLeader is the JetStream meta leader as m sees it ("" if none).
func (m *member) metaLeader() string {
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if m.monitor("/jsz", &jsz) != nil || jsz.Meta == nil {
		return ""
	}
	return jsz.Meta.Leader
}

// natsCluster is the three members.
type natsCluster struct {
	t       *testing.T
	members []*member
}

// passwords are the users' of examples/deploy/secrets.env.example.
var passwords = map[string]string{
	"QUARRY_NATS_PASSWORD": "quarry-test-pw", "FOOD_PASSWORD": "food-test-pw",
	"BOOKS_PASSWORD": "books-test-pw", "NATS_ADMIN_PASSWORD": "admin-test-pw",
}

// newNATSCluster lays out three members with free loopback ports, each
// run by systemd/nats-server.service's command line with nats-N.env's
// variables set to the test's ports and stores. It starts none.
func newNATSCluster(t *testing.T, b binaries) *natsCluster {
	u := readUnit(t, "nats-server.service")
	cl := &natsCluster{t: t}
	var routes []string
	for i := range 3 {
		m := &member{name: fmt.Sprintf("nats-%d", i+1), port: natstest.FreePort(t), clusterPort: natstest.FreePort(t), httpPort: natstest.FreePort(t)}
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", m.clusterPort))
		cl.members = append(cl.members, m)
	}
	for _, m := range cl.members {
		set := map[string]string{
			"NATS_NAME": m.name, "NATS_HOST": "127.0.0.1", "NATS_PORT": fmt.Sprint(m.port),
			"NATS_CLUSTER_PORT": fmt.Sprint(m.clusterPort), "NATS_HTTP_PORT": fmt.Sprint(m.httpPort),
			"NATS_STORE": t.TempDir(), "NATS_ROUTES": "[" + strings.Join(routes, ", ") + "]",
		}
		for k, v := range passwords {
			set[k] = v
		}
		argv, env := u.command(b, "", set)
		m.proc = newProc(t, m.name, argv, env)
	}
	return cl
}

// urls is every member's client URL, comma separated, from member first.
func (cl *natsCluster) urls(first int) string {
	var urls []string
	for k := range cl.members {
		urls = append(urls, cl.members[(first+k)%len(cl.members)].url())
	}
	return strings.Join(urls, ",")
}

// byName returns the member named name.
func (cl *natsCluster) byName(name string) *member {
	cl.t.Helper()
	for _, m := range cl.members {
		if m.name == name {
			return m
		}
	}
	cl.t.Fatalf("no member is named %q", name)
	return nil
}

// metaLeader is the meta leader that a running member reports.
func (cl *natsCluster) metaLeader() string {
	for _, m := range cl.members {
		if m.running() {
			if l := m.metaLeader(); l != "" {
				return l
			}
		}
	}
	return ""
}

// healthy reports whether every running member is healthy and one leads.
func (cl *natsCluster) healthy() bool {
	for _, m := range cl.members {
		if m.running() && !m.healthy() {
			return false
		}
	}
	return cl.metaLeader() != ""
}

// waitFor is testwait.Until: it polls cond for up to d and fails the test
// with what if it never holds; it returns how long it took.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return testwait.Until(t, d, what, cond)
}

// ready reports whether the role whose metrics listener is addr answers
// GET /readyz with 200.
func ready(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
