package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pipeListener hands out one end of net.Pipe connections from the
// addresses the test names.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.done); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7700} }

// remoteConn is a server end with the client's address.
type remoteConn struct {
	net.Conn
	remote net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.remote }

// dial connects a client from ip; it returns the client's end.
func (l *pipeListener) dial(t *testing.T, ip string) net.Conn {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { client.Close() })
	select {
	case l.conns <- remoteConn{Conn: server, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}:
	case <-time.After(5 * time.Second):
		t.Fatalf("the listener took no connection from %s", ip)
	}
	return client
}

// refusal reads the answer a refused client gets.
func refusal(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a refused connection: %v, want an answer", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The listener keeps to its caps: per client address (an IPv6 /64 as
// one), then in total; a connection past one is answered, naming the
// cap's flag, and closed; a closed connection gives its place back.
func TestLimitListener(t *testing.T) {
	t.Parallel()
	pl := newPipeListener()
	l, err := LimitListener(pl, ConnLimits{Total: 5, PerClient: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	accept := func() net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("no connection accepted")
			return nil
		}
	}
	pl.dial(t, "10.0.0.1")
	a1 := accept()
	pl.dial(t, "10.0.0.1")
	accept()
	resp, body := refusal(t, pl.dial(t, "10.0.0.1"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "--http-max-conns-per-client") || !strings.Contains(body, "10.0.0.1 has 2") {
		t.Fatalf("the third from one address: %d %s, want 429 naming --http-max-conns-per-client", resp.StatusCode, body)
	}
	// Two addresses of one IPv6 /64 are one client.
	pl.dial(t, "2001:db8::1")
	accept()
	pl.dial(t, "2001:db8::2")
	accept()
	if resp, body := refusal(t, pl.dial(t, "2001:db8::3")); resp.StatusCode != 429 || !strings.Contains(body, "2001:db8::/64") {
		t.Fatalf("a third from one /64: %d %s, want 429", resp.StatusCode, body)
	}
	pl.dial(t, "10.0.0.9")
	accept()
	if got := l.Open(); got != 5 {
		t.Fatalf("%d open, want 5", got)
	}
	resp, body = refusal(t, pl.dial(t, "10.0.0.8"))
	if resp.StatusCode != 503 || !strings.Contains(body, "--http-max-conns") || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("the sixth: %d %s, want 503 naming --http-max-conns", resp.StatusCode, body)
	}
	a1.Close()
	a1.Close() // twice counts once
	if got := l.Open(); got != 4 {
		t.Fatalf("%d open after a close, want 4", got)
	}
	pl.dial(t, "10.0.0.1") // its place back
	accept()
	if resp, _ := refusal(t, pl.dial(t, "10.0.0.8")); resp.StatusCode != 503 {
		t.Fatalf("past the total again: %d, want 503", resp.StatusCode)
	}
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	for addr, want := range map[net.Addr]string{
		&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}:            "192.0.2.7",
		&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 1}:     "192.0.2.7",
		&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 1}: "2001:db8:1:2::/64",
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}:                  "::/64",
		&net.UnixAddr{Name: "/run/q.sock", Net: "unix"}:                "/run/q.sock",
	} {
		if got := clientKey(addr); got != want {
			t.Errorf("clientKey(%v) = %q, want %q", addr, got, want)
		}
	}
}
