package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/trace"
)

// MaxSearchBody caps a search request body.
const MaxSearchBody = 1 << 20

// Handler returns the HTTP API on top of c. maxBulkBytes caps an NDJSON
// upload.
func Handler(c *client.Client, maxBulkBytes int64, log *slog.Logger) http.Handler {
	h := &handler{c: c, maxBulk: maxBulkBytes, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /v1/indexes", h.list)
	mux.HandleFunc("POST /v1/indexes/{index}", h.create)
	mux.HandleFunc("GET /v1/indexes/{index}", h.get)
	mux.HandleFunc("DELETE /v1/indexes/{index}", h.remove)
	mux.HandleFunc("PUT /v1/indexes/{index}/query", h.setQuery)
	mux.HandleFunc("POST /v1/indexes/{index}/search", h.search)
	mux.HandleFunc("POST /v1/indexes/{index}/documents", h.ingest)
	mux.HandleFunc("GET /v1/indexes/{index}/documents/{id}", h.getDoc)
	mux.HandleFunc("DELETE /v1/indexes/{index}/documents/{id}", h.deleteDoc)
	mux.HandleFunc("GET /v1/indexes/{index}/plugins", h.listPlugins)
	mux.HandleFunc("POST /v1/indexes/{index}/plugins/{name}", h.pushPlugin)
	mux.HandleFunc("POST /v1/indexes/{index}/plugins/{name}/activate", h.activatePlugin)
	mux.HandleFunc("DELETE /v1/indexes/{index}/plugins/{name}", h.removePlugin)
	mux.HandleFunc("POST /v1/indexes/{index}/plugins/{name}/canary", h.canaryPlugin)
	mux.HandleFunc("POST /v1/indexes/{index}/plugins/{name}/promote", h.promotePlugin)
	mux.HandleFunc("POST /v1/indexes/{index}/plugins/{name}/shadow", h.shadowPlugin)
	mux.HandleFunc("GET /v1/indexes/{index}/plugins/{name}/shadow", h.shadowStats)
	mux.HandleFunc("GET /v1/indexes/{index}/events", h.pluginEvents)
	mux.HandleFunc("GET /v1/indexes/{index}/pipeline", h.getPipeline)
	mux.HandleFunc("PUT /v1/indexes/{index}/pipeline", h.setPipeline)
	mux.HandleFunc("POST /v1/indexes/{index}/pipeline/rollback", h.rollbackPipeline)
	return mux
}

type handler struct {
	c       *client.Client
	maxBulk int64
	log     *slog.Logger
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (h *handler) fail(w http.ResponseWriter, err error) {
	var e *api.Error
	if !errors.As(err, &e) {
		e = &api.Error{Code: api.CodeInternal, Message: err.Error()}
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		e = api.Errorf(api.CodeBadRequest, "request body is over the limit of %d bytes", tooBig.Limit)
	}
	if e.RetryAfterMS > 0 {
		w.Header().Set("Retry-After", strconv.Itoa((e.RetryAfterMS+999)/1000))
	}
	writeJSON(w, api.HTTPStatus(e.Code), map[string]*api.Error{"error": e})
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

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Shards  int               `json:"shards"`
		Mapping json.RawMessage   `json:"mapping"`
		Query   api.QuerySettings `json:"query"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		h.fail(w, api.BadRequest("malformed index definition: %v", err))
		return
	}
	def, err := h.c.CreateIndexDef(r.Context(), api.IndexDefinition{Name: r.PathValue("index"), Shards: body.Shards, Mapping: body.Mapping, Query: body.Query})
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 201, def)
}

func (h *handler) setQuery(w http.ResponseWriter, r *http.Request) {
	var qs api.QuerySettings
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&qs); err != nil {
		h.fail(w, api.BadRequest("malformed query settings: %v", err))
		return
	}
	def, err := h.c.SetQuerySettings(r.Context(), r.PathValue("index"), qs)
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
	ctx := r.Context()
	id := r.Header.Get("X-Request-Id")
	if !trace.ValidRequestID(id) {
		id = trace.NewRequestID()
	}
	ctx = trace.WithRequestID(ctx, id)
	w.Header().Set("X-Request-Id", id)
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
	res, err := h.c.Bulk(r.Context(), r.PathValue("index"), http.MaxBytesReader(w, r.Body, h.maxBulk), client.BulkOptions{NoSnapshot: !snap})
	if err != nil && res == nil {
		h.fail(w, err)
		return
	}
	status := 200
	if err != nil {
		// Part of the body went in; say how much and why it stopped.
		writeJSON(w, 500, map[string]any{"result": res, "error": api.Error{Code: api.CodeOf(err), Message: err.Error()}})
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
	doc, err := h.c.Get(r.Context(), r.PathValue("index"), r.PathValue("id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Quarry-Seq", strconv.FormatUint(doc.Seq, 10))
	w.Write(doc.Source)
}

func (h *handler) deleteDoc(w http.ResponseWriter, r *http.Request) {
	seq, err := h.c.Delete(r.Context(), r.PathValue("index"), r.PathValue("id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]uint64{"seq": seq})
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
	step := api.StepSpec{Policy: q.Get("policy")}
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
		step.Config = json.RawMessage(c)
	}
	activate, _ := strconv.ParseBool(q.Get("activate"))
	v, err := h.c.PushPlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), wasm, client.PushOptions{Kind: q.Get("kind"), Step: step, Activate: activate})
	h.reply(w, v, err)
}

func (h *handler) activatePlugin(w http.ResponseWriter, r *http.Request) {
	spec, err := h.c.ActivatePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), r.URL.Query().Get("digest"))
	h.reply(w, spec, err)
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
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		h.fail(w, api.BadRequest("malformed pipeline: %v", err))
		return
	}
	out, err := h.c.SetPipeline(r.Context(), r.PathValue("index"), &spec)
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
	spec, err := h.c.CanaryPlugin(r.Context(), r.PathValue("index"), r.PathValue("name"), q.Get("digest"), p, q.Get("sticky"))
	h.reply(w, spec, err)
}

func (h *handler) promotePlugin(w http.ResponseWriter, r *http.Request) {
	spec, err := h.c.PromotePlugin(r.Context(), r.PathValue("index"), r.PathValue("name"))
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
