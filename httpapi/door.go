package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
)

// DoorConfig says which Host and Origin headers the HTTP API answers.
type DoorConfig struct {
	// Loopback is whether the API listens on loopback only. Then a
	// request's Host must name this machine (localhost or a loopback
	// address, any port) or one of Hosts: a page whose own name was made
	// to resolve to 127.0.0.1 (DNS rebinding) sends its own name and is
	// refused.
	Loopback bool
	// Hosts are more names the API answers to (names or IP addresses,
	// any port). On loopback they are added to localhost's; beyond
	// loopback, when set, they are the only names it answers to (with
	// localhost and any IP address, which no DNS answer can rebind);
	// unset, it answers any name there (it asks for tokens there,
	// which a page of another site does not have).
	Hosts []string
	// Origins are the web origins (scheme://host[:port]) whose pages may
	// call the API besides its own (the console): a request carrying any
	// other Origin is refused with 403, and these get CORS headers.
	// Requests without Origin (curl, programs, the CLI) are not browser
	// pages' and pass.
	Origins []string
}

// Door refuses, before any route sees them, requests a web page may have
// sent without its user's leave: a Host the server is not (DNS
// rebinding) and an Origin that is neither the server's own nor allowed;
// it answers CORS for the allowed origins. Jupyter and Ollama guard their
// loopback APIs the same way.
type Door struct {
	cfg     DoorConfig
	hosts   []string // lower case, without ports
	origins []string // normalized (CheckOrigin)
	refused *prometheus.CounterVec
}

// NewDoor checks cfg's hosts and origins.
func NewDoor(cfg DoorConfig) (*Door, error) {
	d := &Door{cfg: cfg}
	for _, h := range cfg.Hosts {
		name, err := CheckHost(h)
		if err != nil {
			return nil, err
		}
		d.hosts = append(d.hosts, name)
	}
	for _, o := range cfg.Origins {
		norm, err := CheckOrigin(o)
		if err != nil {
			return nil, err
		}
		d.origins = append(d.origins, norm)
	}
	d.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quarry_http_requests_refused_total",
		Help: "HTTP API requests refused before any route, by why: host (a Host header the server is not: --http-hosts), origin (another site's page: --http-origins), content_type (a body without the Content-Type its route takes).",
	}, []string{"reason"})
	for _, r := range []string{"host", "origin", "content_type"} {
		d.refused.WithLabelValues(r)
	}
	return d, nil
}

// CheckHost checks a name for DoorConfig.Hosts and returns it as the
// door compares it: lower case, without a port.
func CheckHost(h string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(h))
	if strings.ContainsAny(name, "/ @?#*") {
		return "", fmt.Errorf("host %q: want a host name or an IP address, such as quarry.internal", h)
	}
	if host, _, err := net.SplitHostPort(name); err == nil {
		name = host
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if name == "" {
		return "", fmt.Errorf("host %q: want a host name or an IP address, such as quarry.internal", h)
	}
	return name, nil
}

// CheckOrigin checks a web origin for DoorConfig.Origins and returns it
// as browsers send it: scheme://host[:port], lower case, without a
// default port or a trailing slash.
func CheckOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("origin %q: want scheme://host[:port], such as https://search.example.com", o)
	}
	host := strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil && (u.Scheme == "http" && port == "80" || u.Scheme == "https" && port == "443") {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return u.Scheme + "://" + host, nil
}

// Collectors are the door's metrics.
func (d *Door) Collectors() []prometheus.Collector { return []prometheus.Collector{d.refused} }

// Wrap puts the door in front of next.
func (d *Door) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.hostAllowed(r.Host) {
			d.refuse(w, "host", api.Errorf(api.CodeForbidden, "this server does not answer to the name in the Host header (%q): a page whose name was made to point here (DNS rebinding) is refused; add a name the server is reached by with --http-hosts", r.Host))
			return
		}
		origin := r.Header.Get("Origin")
		if origin == "" || d.sameOrigin(origin, r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		allowed, ok := d.allowedOrigin(origin)
		if !ok {
			d.refuse(w, "origin", api.Errorf(api.CodeForbidden, "requests from pages of origin %q are refused: only this server's own pages (the console) and the origins in --http-origins may call it", origin))
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", allowed)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			// A preflight: what the page may send.
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, Quarry-Seq, Retry-After")
		next.ServeHTTP(w, r)
	})
}

// refuse answers err, closing the connection, and counts it.
func (d *Door) refuse(w http.ResponseWriter, reason string, err *api.Error) {
	d.refused.WithLabelValues(reason).Inc()
	w.Header().Set("Connection", "close")
	writeJSON(w, api.HTTPStatus(err.Code), map[string]*api.Error{"error": err})
}

// hostAllowed says whether the API answers to a request's Host header.
func (d *Door) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: no browser sends one
	}
	name := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if name == "localhost" || slices.Contains(d.hosts, name) {
		return true
	}
	ip := net.ParseIP(name)
	if d.cfg.Loopback {
		return ip != nil && ip.IsLoopback()
	}
	return len(d.hosts) == 0 || ip != nil
}

// sameOrigin says whether origin is the server's own: its host and port
// are those the request was sent to (the Host header, which hostAllowed
// has accepted), as net/http's CrossOriginProtection compares them.
func (d *Door) sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
}

// allowedOrigin returns origin as allowed (normalized), if it is.
func (d *Door) allowedOrigin(origin string) (string, bool) {
	norm, err := CheckOrigin(origin)
	if err != nil || !slices.Contains(d.origins, norm) {
		return "", false
	}
	return origin, true
}
