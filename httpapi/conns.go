package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
)

// Defaults of ConnLimits.
const (
	// DefaultMaxConns is the most HTTP connections open at once when the
	// open-file limit leaves room for more (node.Config.HTTPMaxConns).
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerClient is the most HTTP connections open at once
	// from one client address (node.Config.HTTPMaxConnsPerClient).
	DefaultMaxConnsPerClient = 256
)

// maxRefusing is how many refused connections may be in their short
// goodbye at once (an answer, then up to refuseLinger for the client to
// read it); beyond that a refused connection is closed without one, so
// refusing costs at most this many descriptors past the cap.
const maxRefusing = 64

// refuseLinger is how long a refused connection waits, its answer sent,
// for the client to stop sending before it is closed: closing with the
// client's request unread would reset the connection and lose the answer
// (net/http's server waits the same way before closing a connection).
const refuseLinger = 500 * time.Millisecond

// ConnLimits cap the HTTP connections a listener keeps open.
type ConnLimits struct {
	// Total is the most connections open at once (at least 1).
	Total int
	// PerClient is the most open at once from one client address: an
	// IPv4 address, or an IPv6 /64 (one host's usual share). 0: Total.
	PerClient int
}

// Listener is a net.Listener that keeps at most ConnLimits open: a
// connection past a cap is answered at once (HTTP 503 unavailable past
// Total, 429 overloaded past PerClient, the body naming the cap and the
// setting that raises it) and closed, before the HTTP server sees it.
// Its metrics are Collectors.
type Listener struct {
	net.Listener
	lim ConnLimits
	log *slog.Logger

	mu       sync.Mutex
	open     int
	perConn  map[string]int // by clientKey
	refusing atomic.Int32

	openGauge prometheus.GaugeFunc
	maxGauge  prometheus.Gauge
	refused   *prometheus.CounterVec
}

// LimitListener wraps ln to keep to lim.
func LimitListener(ln net.Listener, lim ConnLimits, log *slog.Logger) (*Listener, error) {
	if lim.Total < 1 {
		return nil, fmt.Errorf("httpapi: the HTTP connection cap must be 1 or more, got %d", lim.Total)
	}
	if lim.PerClient <= 0 || lim.PerClient > lim.Total {
		lim.PerClient = lim.Total
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Listener{Listener: ln, lim: lim, log: log, perConn: map[string]int{}}
	l.openGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "quarry_http_connections",
		Help: "HTTP API connections open now.",
	}, func() float64 { return float64(l.Open()) })
	l.maxGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "quarry_http_connections_limit",
		Help: "The most HTTP API connections open at once (--http-max-conns); more are refused.",
	})
	l.maxGauge.Set(float64(lim.Total))
	l.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quarry_http_connections_refused_total",
		Help: "HTTP API connections refused at once, by the cap they were over: total (--http-max-conns) or client (--http-max-conns-per-client).",
	}, []string{"cap"})
	for _, c := range []string{"total", "client"} {
		l.refused.WithLabelValues(c)
	}
	return l, nil
}

// Limits are the caps the listener keeps, defaults filled in.
func (l *Listener) Limits() ConnLimits { return l.lim }

// Open is how many connections are open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Collectors are the listener's metrics.
func (l *Listener) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.openGauge, l.maxGauge, l.refused}
}

// Accept returns the next connection within the caps, refusing those
// past them on the way.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		l.mu.Lock()
		over := ""
		switch {
		case l.open >= l.lim.Total:
			over = "total"
		case l.perConn[key] >= l.lim.PerClient:
			over = "client"
		default:
			l.open++
			l.perConn[key]++
		}
		l.mu.Unlock()
		if over == "" {
			return &limitedConn{Conn: c, l: l, key: key}, nil
		}
		l.refuse(c, key, over)
	}
}

// release counts a connection of key's closed.
func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perConn[key]--; l.perConn[key] <= 0 {
		delete(l.perConn, key)
	}
}

// refuse answers c, over the cap named, and closes it.
func (l *Listener) refuse(c net.Conn, key, over string) {
	l.refused.WithLabelValues(over).Inc()
	var status int
	var e *api.Error
	if over == "total" {
		status = http.StatusServiceUnavailable
		e = api.Errorf(api.CodeUnavailable, "this server has %d HTTP connections open, its cap (--http-max-conns); try again shortly", l.lim.Total)
	} else {
		status = http.StatusTooManyRequests
		e = api.Errorf(api.CodeOverloaded, "%s has %d HTTP connections open, the cap for one client address (--http-max-conns-per-client); reuse a connection or close one", key, l.lim.PerClient)
		e.RetryAfterMS = 1000
	}
	l.log.Debug("HTTP connection refused", "client", c.RemoteAddr().String(), "cap", over)
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		body, _ := json.Marshal(map[string]*api.Error{"error": e})
		c.SetDeadline(time.Now().Add(refuseLinger))
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(body), body)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		// Read what the client sends until it closes or the linger
		// ends, so that closing does not reset the connection under
		// the answer.
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// clientKey is the address a connection is counted under: its IPv4
// address, or its IPv6 address's /64.
func clientKey(a net.Addr) string {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// limitedConn gives its place back once closed.
type limitedConn struct {
	net.Conn
	l    *Listener
	key  string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// CloseWrite shuts the sending side, as net/http does before closing a
// connection it answered with "Connection: close" (so that the client
// reads the answer rather than a reset).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
