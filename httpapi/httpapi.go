package httpapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/strictjson"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/console"
	"github.com/quarrysearch/quarry/internal/requestid"
)

// MaxSearchBody caps a search request body.
const MaxSearchBody = 1 << 20

// Options configure the HTTP API.
type Options struct {
	// MaxBulkBytes caps an NDJSON upload.
	MaxBulkBytes int64
	// Guard, when set, requires a token on every request and keeps teams
	// to their own indexes; nil: the API is open (for loopback only).
	Guard *Guard
	// BodyTimeout is how long the API waits for more of a request's body
	// (DefaultBodyTimeout when 0): a client that stops sending one midway
	// gets 400 and its connection closed, instead of holding it and a
	// goroutine for ever. It bounds each wait, not the whole body, so an
	// upload of a gigabyte that keeps coming is not cut off.
	BodyTimeout time.Duration
	// Door, when set, is the door in front of the API (node puts it
	// there): the API counts among its refusals the requests it refuses
	// for their Content-Type.
	Door   *Door
	Logger *slog.Logger
}

// DefaultBodyTimeout is Options.BodyTimeout's default.
const DefaultBodyTimeout = 30 * time.Second

// Handler returns the HTTP API on top of c.
func Handler(c *client.Client, opts Options) http.Handler {
	h := &handler{c: c, maxBulk: opts.MaxBulkBytes, log: opts.Logger}
	bodyTimeout := cmp.Or(opts.BodyTimeout, DefaultBodyTimeout)
	mux := http.NewServeMux()
	// route serves pattern to callers with access a; a request with a
	// body must send one of types as its Content-Type (default: JSON).
	route := func(pattern string, a access, f http.HandlerFunc, types ...string) {
		if len(types) == 0 {
			types = jsonBody
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody {
				// From here on, even an answer given without reading the
				// body (a refusal) waits at most bodyTimeout for it: the
				// server reads what is left of a small body before it
				// answers.
				r.Body = newTimedBody(w, r.Body, bodyTimeout)
			}
			// Every answer names its request (the caller's X-Request-Id,
			// or one made here): an internal error's message gives it,
			// and the log has the detail under it.
			id := r.Header.Get("X-Request-Id")
			if !requestid.Valid(id) {
				id = requestid.New()
			}
			w.Header().Set("X-Request-Id", id)
			if opts.Guard != nil {
				if err := opts.Guard.check(r, a); err != nil {
					h.fail(w, err)
					return
				}
			}
			if err := bodyType(r, types); err != nil {
				if opts.Door != nil {
					opts.Door.refused.WithLabelValues("content_type").Inc()
				}
				h.fail(w, err)
				return
			}
			if err := validText(r); err != nil {
				h.fail(w, err)
				return
			}
			f(w, r)
		})
	}
	h.register(route, opts.Guard)
	// The console: static pages that call the routes above with the
	// token the user gives them (internal/console).
	mux.Handle("GET /{$}", console.Handler())
	mux.Handle("GET /console/", console.Handler())
	return mux
}

// routeFunc serves a route pattern to callers with an access; a request
// with a body must send one of types as its Content-Type (default:
// JSON).
type routeFunc func(pattern string, a access, f http.HandlerFunc, types ...string)

// register gives each route of the API to route: the one list of them,
// which Handler serves and the OpenAPI document (openapi.go) describes.
func (h *handler) register(route routeFunc, guard *Guard) {
	route("GET /healthz", open, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	route("GET /openapi.json", open, serveOpenAPI)
	route("GET /v1/indexes", operator, h.list)
	route("POST /v1/indexes/{index}", operator, h.create)
	route("GET /v1/indexes/{index}", operator, h.get)
	route("DELETE /v1/indexes/{index}", operator, h.remove)
	route("PUT /v1/indexes/{index}/query", operator, h.setQuery)
	route("PUT /v1/indexes/{index}/mapping", operator, h.setMapping)
	route("POST /v1/indexes/{index}/search", team(api.ScopeSearch), h.search)
	route("GET /v1/indexes/{index}/search", team(api.ScopeSearch), h.searchGET)
	route("POST /v1/indexes/{index}/documents", team(api.ScopeWrite), h.ingest, ndjsonBody...)
	route("GET /v1/indexes/{index}/documents/{id}", team(api.ScopeSearch), h.getDoc)
	route("DELETE /v1/indexes/{index}/documents/{id}", team(api.ScopeWrite), h.deleteDoc)
	route("PATCH /v1/indexes/{index}/documents/{id}", team(api.ScopeWrite), h.patchDoc, patchBody...)
	// The same with the id as a query parameter (?id=), for ids no path
	// segment can carry: a slash, a backslash, NUL, "." or "..".
	route("GET /v1/indexes/{index}/documents", team(api.ScopeSearch), h.getDoc)
	route("DELETE /v1/indexes/{index}/documents", team(api.ScopeWrite), h.deleteDoc)
	route("PATCH /v1/indexes/{index}/documents", team(api.ScopeWrite), h.patchDoc, patchBody...)
	route("POST /v1/indexes/{index}/delete-by-query", team(api.ScopeWrite), h.deleteByQuery)
	route("GET /v1/indexes/{index}/plugins", team(api.ScopeAdmin), h.listPlugins)
	route("POST /v1/indexes/{index}/plugins/{name}", team(api.ScopeAdmin), h.pushPlugin, wasmBody...)
	route("POST /v1/indexes/{index}/plugins/{name}/activate", team(api.ScopeAdmin), h.activatePlugin)
	route("DELETE /v1/indexes/{index}/plugins/{name}", team(api.ScopeAdmin), h.removePlugin)
	route("POST /v1/indexes/{index}/plugins/{name}/canary", team(api.ScopeAdmin), h.canaryPlugin)
	route("GET /v1/indexes/{index}/plugins/{name}/canary", team(api.ScopeAdmin), h.canaryStats)
	route("POST /v1/indexes/{index}/plugins/{name}/promote", team(api.ScopeAdmin), h.promotePlugin)
	route("POST /v1/indexes/{index}/plugins/{name}/shadow", team(api.ScopeAdmin), h.shadowPlugin)
	route("GET /v1/indexes/{index}/plugins/{name}/shadow", team(api.ScopeAdmin), h.shadowStats)
	route("GET /v1/indexes/{index}/plugins/{name}/logs", team(api.ScopeAdmin), h.pluginLogs)
	route("GET /v1/indexes/{index}/events", team(api.ScopeAdmin), h.pluginEvents)
	route("GET /v1/indexes/{index}/pipeline", team(api.ScopeAdmin), h.getPipeline)
	route("PUT /v1/indexes/{index}/pipeline", team(api.ScopeAdmin), h.setPipeline)
	route("POST /v1/indexes/{index}/pipeline/rollback", team(api.ScopeAdmin), h.rollbackPipeline)
	route("GET /v1/indexes/{index}/pipeline/history", team(api.ScopeAdmin), h.pipelineHistory)
	route("GET /v1/indexes/{index}/info", team(api.ScopeAdmin), h.indexInfo)
	route("GET /v1/indexes/{index}/queries", team(api.ScopeAdmin), h.queryReport)
	route("GET /v1/indexes/{index}/rejected", team(api.ScopeAdmin), h.rejectedDocs)
	route("GET /v1/aliases", operator, h.listAliases)
	route("GET /v1/aliases/{alias}", operator, h.getAlias)
	route("POST /v1/aliases/{alias}", operator, h.createAlias)
	route("PUT /v1/aliases/{alias}", operator, h.switchAlias)
	route("DELETE /v1/aliases/{alias}", operator, h.removeAlias)
	route("GET /v1/roles", operator, h.roles)
	route("GET /v1/me", anyToken, func(w http.ResponseWriter, r *http.Request) { h.me(w, r, guard) })
	route("GET /v1/indexes/{index}/judgements", team(api.ScopeAdmin), h.listJudgements)
	route("PUT /v1/indexes/{index}/judgements/{name}", team(api.ScopeAdmin), h.pushJudgements, ndjsonBody...)
	route("GET /v1/indexes/{index}/judgements/{name}", team(api.ScopeAdmin), h.showJudgements)
	route("DELETE /v1/indexes/{index}/judgements/{name}", team(api.ScopeAdmin), h.removeJudgements)
	route("POST /v1/indexes/{index}/judgements/{name}/eval", team(api.ScopeAdmin), h.evaluate)
	route("POST /v1/indexes/{index}/events", team(api.ScopeWrite), h.putEvents, ndjsonBody...)
	route("GET /v1/indexes/{index}/gate", team(api.ScopeAdmin), h.getGate)
	route("PUT /v1/indexes/{index}/gate", team(api.ScopeAdmin), h.setGate)
	route("DELETE /v1/indexes/{index}/gate", team(api.ScopeAdmin), h.removeGate)
}

// Strict refuses, with 400, a request whose path is not in canonical form
// (an empty, "." or ".." segment, or an encoded slash, dot or backslash)
// before next sees it. Go's ServeMux would otherwise answer such a path
// with a redirect to its cleaned form, and a client that follows it (curl
// -L, Go's http.Client) sends a DELETE for a document id ".." on to the
// index itself.
func Strict(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := notCanonical(r.URL.EscapedPath()); why != "" {
			writeJSON(w, 400, map[string]*api.Error{"error": api.BadRequest("path %q: %s; name a document with those characters with ?id= (/v1/indexes/{index}/documents?id=…)", r.URL.EscapedPath(), why)})
			return
		}
		next.ServeHTTP(&jsonRouteErrors{ResponseWriter: w, r: r}, r)
	})
}

// CodeMethodNotAllowed is the code of a request whose path has routes,
// none for its method (405, with the Allow header).
const CodeMethodNotAllowed api.Code = "method_not_allowed"

// jsonRouteErrors turns the router's own plain-text answers (404 for a
// path no route has, 405 for a method a path has no route for) into the
// API's JSON errors, as every other answer is.
type jsonRouteErrors struct {
	http.ResponseWriter
	r         *http.Request
	swallowed bool // the router's text, replaced
}

func (w *jsonRouteErrors) WriteHeader(code int) {
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		e := api.NotFound("no route %s %s (docs/api.md)", w.r.Method, w.r.URL.Path)
		if code == http.StatusMethodNotAllowed {
			e = &api.Error{Code: CodeMethodNotAllowed, Message: fmt.Sprintf("%s takes %s, not %s (docs/api.md)", w.r.URL.Path, w.Header().Get("Allow"), w.r.Method)}
		}
		w.Header().Del("Content-Length")
		writeJSON(w.ResponseWriter, code, map[string]*api.Error{"error": e})
		w.swallowed = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonRouteErrors) Write(b []byte) (int, error) {
	if w.swallowed {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the connection's writer.
func (w *jsonRouteErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notCanonical says why an escaped path is not canonical, or "".
func notCanonical(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "it must start with /"
	}
	lower := strings.ToLower(p)
	for _, enc := range []string{"%2f", "%5c", "%2e", "%00"} {
		if strings.Contains(lower, enc) {
			return "it has an encoded slash, backslash, dot or NUL (" + enc + ")"
		}
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		switch {
		case seg == "." || seg == "..":
			return "it has a dot segment"
		case seg == "" && i < len(segs)-1:
			return "it has an empty segment (//)"
		}
	}
	return ""
}

// validText refuses a query parameter with invalid UTF-8 (encoding it
// for the admin API would replace it with U+FFFD), naming it.
func validText(r *http.Request) error {
	for name, values := range r.URL.Query() {
		if !utf8.ValidString(name) {
			return api.BadRequest("a query parameter's name is not valid UTF-8: %q", name)
		}
		for _, v := range values {
			if !utf8.ValidString(v) {
				return api.BadRequest("query parameter %s is not valid UTF-8: %q", name, v)
			}
		}
	}
	return nil
}

type handler struct {
	c       *client.Client
	maxBulk int64
	log     *slog.Logger
}

// logger is the handler's logger, or slog's default.
func (h *handler) logger() *slog.Logger {
	if h.log != nil {
		return h.log
	}
	return slog.Default()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// public is err as the caller may see it: an *api.Error as it is, a body
// over its limit as a bad request; any other error is internal, its
// detail (a Go error's text, a library's words) logged under the
// request's id and the caller told "internal error (request id …)".
func (h *handler) public(w http.ResponseWriter, err error) *api.Error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return api.Errorf(api.CodeBadRequest, "request body is over the limit of %d bytes", tooBig.Limit)
	}
	var slow *bodyError
	if errors.As(err, &slow) {
		return api.Errorf(api.CodeBadRequest, "%v", slow)
	}
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	id := w.Header().Get("X-Request-Id")
	h.logger().Error("internal error", "request_id", id, "err", err)
	return api.Errorf(api.CodeInternal, "internal error (request id %s)", id)
}

// fail answers err. A 401 closes the connection: a client without a
// valid token keeps no connection open (and no file descriptor) by
// keeping it alive.
func (h *handler) fail(w http.ResponseWriter, err error) {
	e := h.public(w, err)
	if e.RetryAfterMS > 0 {
		w.Header().Set("Retry-After", strconv.Itoa((e.RetryAfterMS+999)/1000))
	}
	if e.Code == api.CodeUnauthorized {
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, status(e.Code), map[string]*api.Error{"error": e})
}

// status is the HTTP status of an error code.
func status(c api.Code) int {
	if c == CodeUnsupportedMediaType {
		return http.StatusUnsupportedMediaType
	}
	return api.HTTPStatus(c)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	defs, err := h.c.Indexes(r.Context())
	if err != nil {
		h.fail(w, err)
		return
	}
	if defs == nil {
		defs = []api.IndexDefinition{}
	}
	writeJSON(w, 200, map[string]any{"indexes": defs})
}

// decodeBody reads a JSON body of at most MaxSearchBody bytes into v,
// strictly (api.DecodeStrict); what names it in errors.
func decodeBody(w http.ResponseWriter, r *http.Request, what string, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	if err != nil {
		return err
	}
	return api.DecodeStrict(what, b, v)
}

// indexBody is what POST /v1/indexes/{index} takes: an
// api.IndexDefinition without its name (the path's) and creation time.
type indexBody struct {
	Shards    int                `json:"shards"`
	Team      string             `json:"team"`
	Mapping   json.RawMessage    `json:"mapping"`
	Query     api.QuerySettings  `json:"query"`
	Documents api.DocumentLimits `json:"documents"`
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	var body indexBody
	if err := decodeBody(w, r, "index definition", &body); err != nil {
		h.fail(w, err)
		return
	}
	def, err := h.c.CreateIndexDef(r.Context(), api.IndexDefinition{Name: r.PathValue("index"), Shards: body.Shards, Team: body.Team,
		Mapping: body.Mapping, Query: body.Query, Documents: body.Documents})
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 201, def)
}

func (h *handler) setQuery(w http.ResponseWriter, r *http.Request) {
	var qs api.QuerySettings
	if err := decodeBody(w, r, "query settings", &qs); err != nil {
		h.fail(w, err)
		return
	}
	def, err := h.c.SetQuerySettings(r.Context(), r.PathValue("index"), qs)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, def)
}

// setMapping changes an index's mapping in place (client.ChangeMapping):
// the body is the whole new mapping.
func (h *handler) setMapping(w http.ResponseWriter, r *http.Request) {
	var mapping json.RawMessage
	if err := decodeBody(w, r, "mapping", &mapping); err != nil {
		h.fail(w, err)
		return
	}
	def, err := h.c.ChangeMapping(r.Context(), r.PathValue("index"), mapping)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, def)
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	st, err := h.c.Status(r.Context(), r.PathValue("index"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, st)
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	if err := h.c.DeleteIndex(r.Context(), r.PathValue("index")); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(204)
}

func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	if err != nil {
		h.fail(w, err)
		return
	}
	h.searchBody(w, r, body)
}

// searchParams are the URL parameters GET …/search takes, each the
// search request member of its name: the simple cases, in a URL. Lists
// (fields, sort) are comma-separated; suggest names the field whose words
// complete q's last word ({"suggest": {"field": …}}).
var searchParams = map[string]string{"q": "string", "size": "int", "from": "int", "timeout_ms": "int",
	"fields": "list", "sort": "list", "search_after": "string", "scoring": "string", "profile": "bool", "explain": "bool", "typos": "bool", "prefix": "bool",
	"suggest": "field"}

// searchGET answers GET /v1/indexes/{index}/search?q=…&size=…: the
// request its parameters make, checked and answered as a POSTed one.
func (h *handler) searchGET(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, api.BadRequest("query parameters: %v", err))
		return
	}
	req := map[string]any{}
	for name, vals := range q {
		kind, ok := searchParams[name]
		if !ok {
			h.fail(w, api.BadRequest("unknown parameter %q: GET …/search takes %s; POST a JSON body for the rest", name, strings.Join(slices.Sorted(maps.Keys(searchParams)), ", ")))
			return
		}
		if len(vals) != 1 {
			h.fail(w, api.BadRequest("parameter %q given %d times", name, len(vals)))
			return
		}
		v := vals[0]
		switch kind {
		case "string":
			req[name] = v
		case "int":
			n, err := strconv.Atoi(v)
			if err != nil {
				h.fail(w, api.BadRequest("parameter %q: %q is not a whole number", name, v))
				return
			}
			req[name] = n
		case "bool":
			b, err := strconv.ParseBool(v)
			if err != nil {
				h.fail(w, api.BadRequest("parameter %q: %q is not true or false", name, v))
				return
			}
			req[name] = b
		case "list":
			req[name] = strings.Split(v, ",")
		case "field":
			req[name] = map[string]string{"field": v}
		}
	}
	body, err := json.Marshal(req)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.searchBody(w, r, body)
}

// searchBody answers a search request's JSON body.
func (h *handler) searchBody(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx := requestid.With(r.Context(), w.Header().Get("X-Request-Id"))
	resp, err := h.c.SearchRaw(ctx, r.PathValue("index"), body)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp)
}

func (h *handler) ingest(w http.ResponseWriter, r *http.Request) {
	snap, _ := strconv.ParseBool(r.URL.Query().Get("snapshot"))
	wait := r.URL.Query().Get("wait")
	if wait != "" && wait != "searchable" {
		h.fail(w, api.BadRequest("wait=%q: the one value is searchable (answer once a search finds every document stored)", wait))
		return
	}
	res, err := h.c.Bulk(r.Context(), r.PathValue("index"), http.MaxBytesReader(w, r.Body, h.maxBulk),
		client.BulkOptions{NoSnapshot: !snap, WaitSearchable: wait == "searchable", Format: r.URL.Query().Get("format")})
	if err != nil && res == nil {
		h.fail(w, err)
		return
	}
	status := 200
	if err != nil {
		// Part of the body went in; say how much and why it stopped: the
		// caller's fault (a body over the limit) is a 400, anything else
		// a 500 whose detail is in the log.
		e := h.public(w, err)
		writeJSON(w, api.HTTPStatus(e.Code), map[string]any{"result": res, "error": e})
		return
	}
	if res.Failed > 0 {
		status = 207 // some lines refused: the body lists them
	}
	writeJSON(w, status, res)
}

// getDoc answers the stored document itself, exactly as it was written
// (client.Get: read from the stream, the source of truth), with the stream
// sequence that stored it in the Quarry-Seq header.
func (h *handler) getDoc(w http.ResponseWriter, r *http.Request) {
	id, err := docID(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	doc, err := h.c.Get(r.Context(), r.PathValue("index"), id)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Quarry-Seq", strconv.FormatUint(doc.Seq, 10))
	w.Header().Set("ETag", `"`+strconv.FormatUint(doc.Seq, 10)+`"`) // what If-Match takes
	w.Write(doc.Source)
}

// deleteByQuery deletes the documents a query finds (client.DeleteByQuery),
// answering what it did; a failure part way answers the error, with what
// was deleted before it logged.
func (h *handler) deleteByQuery(w http.ResponseWriter, r *http.Request) {
	var q client.DeleteQuery
	if err := decodeBody(w, r, "delete by query", &q); err != nil {
		h.fail(w, err)
		return
	}
	res, err := h.c.DeleteByQuery(r.Context(), r.PathValue("index"), q)
	if err != nil {
		if res.Deleted > 0 {
			h.logger().Warn("delete by query stopped part way", "index", r.PathValue("index"), "deleted", res.Deleted, "last_seq", res.LastSeq, "err", err)
		}
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, res)
}

// patchDoc applies a JSON merge patch to one document (client.Patch):
// If-Match, the ETag of a GET (the stream sequence of the version read),
// applies it to that version only, else it is a conflict (409).
func (h *handler) patchDoc(w http.ResponseWriter, r *http.Request) {
	id, err := docID(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	var opts client.PatchOptions
	if m := r.Header.Get("If-Match"); m != "" {
		seq, err := strconv.ParseUint(strings.Trim(m, `"`), 10, 64)
		if err != nil || seq == 0 {
			h.fail(w, api.BadRequest("If-Match %q: give the ETag of a GET of the document, a stream sequence in quotes (\"42\")", m))
			return
		}
		opts.IfSeq = seq
	}
	patch, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.DefaultMaxDocBytes))
	if err != nil {
		h.fail(w, err)
		return
	}
	seq, err := h.c.Patch(r.Context(), r.PathValue("index"), id, patch, opts)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("ETag", `"`+strconv.FormatUint(seq, 10)+`"`)
	writeJSON(w, 200, map[string]uint64{"seq": seq})
}

func (h *handler) deleteDoc(w http.ResponseWriter, r *http.Request) {
	id, err := docID(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	seq, err := h.c.Delete(r.Context(), r.PathValue("index"), id)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]uint64{"seq": seq})
}

// docID is the document id a request names: the path's last segment
// (…/documents/{id}), or the one id query parameter of …/documents?id=,
// the way to name an id no path segment can carry (a slash, a backslash,
// NUL, "." or ".."; Strict refuses those in paths). The query form takes
// no other parameter.
func docID(r *http.Request) (string, error) {
	if id := r.PathValue("id"); id != "" {
		if r.URL.RawQuery != "" {
			return "", api.BadRequest("a document's path takes no query parameters, got %q", r.URL.RawQuery)
		}
		return id, nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", api.BadRequest("query parameters: %v", err)
	}
	for name := range q {
		if name != "id" {
			return "", api.BadRequest("unknown query parameter %q: name the document with id", name)
		}
	}
	switch ids := q["id"]; {
	case len(ids) == 0:
		return "", api.BadRequest("name the document: /v1/indexes/{index}/documents/{id}, or /v1/indexes/{index}/documents?id=… for an id with a slash, a backslash, NUL or a dot segment")
	case len(ids) > 1:
		return "", api.BadRequest("id is given %d times; give it once", len(ids))
	case ids[0] == "":
		return "", api.BadRequest("id is empty")
	default:
		return ids[0], nil
	}
}

// MaxPluginBody caps an uploaded plugin.
const MaxPluginBody = 64 << 20

func (h *handler) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, v)
}

func (h *handler) listPlugins(w http.ResponseWriter, r *http.Request) {
	l, err := h.c.Plugins(r.Context(), r.PathValue("index"))
	h.reply(w, l, err)
}

func (h *handler) pushPlugin(w http.ResponseWriter, r *http.Request) {
	wasm, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPluginBody))
	if err != nil {
		h.fail(w, err)
		return
	}
	q := r.URL.Query()
	step := api.StepSpec{Policy: api.Policy(q.Get("policy"))}
	for name, dst := range map[string]*int{"budget_ms": &step.BudgetMS, "latency_budget_ms": &step.LatencyBudgetMS, "rerank_depth": &step.RerankDepth, "instances": &step.Instances} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.Atoi(v); err != nil {
				h.fail(w, api.BadRequest("%s must be a number, got %q", name, v))
				return
			}
		}
	}
	if f := q.Get("fields"); f != "" {
		step.Fields = strings.Split(f, ",")
	}
	if c := q.Get("config"); c != "" {
		if err := strictjson.CheckAny([]byte(c)); err != nil {
			h.fail(w, api.BadRequest("config: %v", err))
			return
		}
		step.Config = json.RawMessage(c)
	}
	activate, _ := strconv.ParseBool(q.Get("activate"))
	v, err := h.c.PushPlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), wasm, client.PushOptions{Kind: q.Get("kind"), Step: step, Activate: activate})
	h.reply(w, v, err)
}

func (h *handler) activatePlugin(w http.ResponseWriter, r *http.Request) {
	opts, err := goLive(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	spec, err := h.c.ActivatePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), r.URL.Query().Get("digest"), opts...)
	h.reply(w, spec, err)
}

// goLive reads force and reason, the relevance gate's override.
func goLive(r *http.Request) ([]client.GoLiveOption, error) {
	q := r.URL.Query()
	v := q.Get("force")
	if v == "" {
		return nil, nil
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		return nil, api.BadRequest("force must be true or false, got %q", v)
	}
	if !force {
		return nil, nil
	}
	return []client.GoLiveOption{client.Force(q.Get("reason"))}, nil
}

func (h *handler) removePlugin(w http.ResponseWriter, r *http.Request) {
	spec, err := h.c.RemovePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"))
	h.reply(w, spec, err)
}

func (h *handler) getPipeline(w http.ResponseWriter, r *http.Request) {
	spec, err := h.c.Pipeline(r.Context(), r.PathValue("index"))
	h.reply(w, spec, err)
}

func (h *handler) setPipeline(w http.ResponseWriter, r *http.Request) {
	var spec api.PipelineSpec
	if err := decodeBody(w, r, "pipeline", &spec); err != nil {
		h.fail(w, err)
		return
	}
	opts, err := goLive(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	out, err := h.c.SetPipeline(r.Context(), r.PathValue("index"), &spec, opts...)
	h.reply(w, out, err)
}

// percent reads the percent query parameter (0-100; the admin API checks
// the range).
func percent(r *http.Request) (int, error) {
	v := r.URL.Query().Get("percent")
	if v == "" {
		return 0, api.BadRequest("percent is required (0 ends it)")
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		return 0, api.BadRequest("percent must be a number, got %q", v)
	}
	return p, nil
}

func (h *handler) canaryPlugin(w http.ResponseWriter, r *http.Request) {
	p, err := percent(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	q := r.URL.Query()
	if v := q.Get("interleave"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			h.fail(w, api.BadRequest("interleave must be true or false, got %q", v))
			return
		}
		if on {
			var test api.InterleaveSpec
			for name, dst := range map[string]*float64{"delta": &test.Delta, "alpha": &test.Alpha, "beta": &test.Beta} {
				if v := q.Get(name); v != "" {
					if *dst, err = strconv.ParseFloat(v, 64); err != nil {
						h.fail(w, api.BadRequest("%s must be a number, got %q", name, v))
						return
					}
				}
			}
			if v := q.Get("max_queries"); v != "" {
				if test.MaxQueries, err = strconv.Atoi(v); err != nil {
					h.fail(w, api.BadRequest("max_queries must be a number, got %q", v))
					return
				}
			}
			spec, err := h.c.InterleavePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), q.Get("digest"), p, q.Get("sticky"), test)
			h.reply(w, spec, err)
			return
		}
	}
	spec, err := h.c.CanaryPlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), q.Get("digest"), p, q.Get("sticky"))
	h.reply(w, spec, err)
}

func (h *handler) canaryStats(w http.ResponseWriter, r *http.Request) {
	st, err := h.c.CanaryStats(r.Context(), r.PathValue("index"), r.PathValue("name"))
	h.reply(w, st, err)
}

func (h *handler) promotePlugin(w http.ResponseWriter, r *http.Request) {
	opts, err := goLive(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	spec, err := h.c.PromotePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), opts...)
	h.reply(w, spec, err)
}

func (h *handler) shadowPlugin(w http.ResponseWriter, r *http.Request) {
	p, err := percent(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	spec, err := h.c.ShadowPlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), r.URL.Query().Get("digest"), p)
	h.reply(w, spec, err)
}

func (h *handler) shadowStats(w http.ResponseWriter, r *http.Request) {
	st, err := h.c.ShadowStats(r.Context(), r.PathValue("index"), r.PathValue("name"))
	h.reply(w, st, err)
}

func (h *handler) pluginEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := h.c.PluginEvents(r.Context(), r.PathValue("index"))
	if evs == nil && err == nil {
		evs = []api.PluginEvent{}
	}
	h.reply(w, evs, err)
}

func (h *handler) rollbackPipeline(w http.ResponseWriter, r *http.Request) {
	spec, err := h.c.RollbackPipeline(r.Context(), r.PathValue("index"))
	h.reply(w, spec, err)
}

func (h *handler) pipelineHistory(w http.ResponseWriter, r *http.Request) {
	hist, err := h.c.PipelineHistory(r.Context(), r.PathValue("index"))
	h.reply(w, hist, err)
}

func (h *handler) indexInfo(w http.ResponseWriter, r *http.Request) {
	info, err := h.c.IndexInfo(r.Context(), r.PathValue("index"))
	h.reply(w, info, err)
}

func (h *handler) queryReport(w http.ResponseWriter, r *http.Request) {
	rep, err := h.c.QueryReport(r.Context(), r.PathValue("index"))
	h.reply(w, rep, err)
}

// rejectedDocs answers the records of an index's rejected documents
// (documents.rejected), the last ?limit= of them (default: all kept).
func (h *handler) rejectedDocs(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			h.fail(w, api.BadRequest("query parameter limit=%q: want a whole number", s))
			return
		}
		limit = int(min(v, 1<<30))
	}
	docs, err := h.c.RejectedDocuments(r.Context(), r.PathValue("index"), limit)
	if docs == nil && err == nil {
		docs = []api.RejectedDocument{}
	}
	h.reply(w, docs, err)
}

func (h *handler) roles(w http.ResponseWriter, r *http.Request) {
	roles, err := h.c.Roles(r.Context(), 0)
	h.reply(w, roles, err)
}

// me answers who the request's token is: its team, whether it is an
// operator's, and the indexes it may use (a team's own; every index for
// an operator, or when the API is open).
func (h *handler) me(w http.ResponseWriter, r *http.Request, g *Guard) {
	who := Identity{Operator: true}
	if g != nil {
		who = g.identity(r)
	}
	if who.Operator {
		defs, err := h.c.Indexes(r.Context())
		if err != nil {
			h.fail(w, err)
			return
		}
		for _, d := range defs {
			who.Indexes = append(who.Indexes, d.Name)
		}
	}
	if who.Indexes == nil {
		who.Indexes = []string{}
	}
	who.Auth = g != nil
	writeJSON(w, 200, who)
}
