package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/quarrysearch/quarry/api"
)

// The judgement lists, the relevance gate and evaluations: the admin
// API's judgements.* operations (docs/relevance.md).

func (h *handler) listJudgements(w http.ResponseWriter, r *http.Request) {
	sets, err := h.c.JudgementSets(r.Context(), r.PathValue("index"))
	if sets == nil && err == nil {
		sets = []api.JudgementSet{}
	}
	h.reply(w, sets, err)
}

// pushJudgements takes the NDJSON list as the body.
func (h *handler) pushJudgements(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxJudgementBytes))
	if err != nil {
		h.fail(w, err)
		return
	}
	set, err := h.c.PushJudgements(r.Context(), r.PathValue("index"), r.PathValue("name"), body)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 201, set)
}

func (h *handler) showJudgements(w http.ResponseWriter, r *http.Request) {
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			h.fail(w, api.BadRequest("version must be a number, got %q", v))
			return
		}
		version = n
	}
	set, err := h.c.JudgementSet(r.Context(), r.PathValue("index"), r.PathValue("name"), version)
	h.reply(w, set, err)
}

func (h *handler) removeJudgements(w http.ResponseWriter, r *http.Request) {
	if err := h.c.RemoveJudgements(r.Context(), r.PathValue("index"), r.PathValue("name")); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(204)
}

// evaluate takes an optional JSON body: {"k", "confidence", "variant":
// {"plugin", "digest"}}; the set is the path's.
func (h *handler) evaluate(w http.ResponseWriter, r *http.Request) {
	var req api.EvalRequest
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	if err != nil {
		h.fail(w, err)
		return
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := api.DecodeStrict("evaluation request", b, &req); err != nil {
			h.fail(w, err)
			return
		}
	}
	if req.Set != "" && req.Set != r.PathValue("name") {
		h.fail(w, api.BadRequest("the body's set %q is not the path's %q", req.Set, r.PathValue("name")))
		return
	}
	req.Set = r.PathValue("name")
	rep, err := h.c.Evaluate(r.Context(), r.PathValue("index"), req)
	h.reply(w, rep, err)
}

func (h *handler) getGate(w http.ResponseWriter, r *http.Request) {
	g, err := h.c.Gate(r.Context(), r.PathValue("index"))
	h.reply(w, g, err)
}

func (h *handler) setGate(w http.ResponseWriter, r *http.Request) {
	var g api.Gate
	if err := decodeBody(w, r, "gate", &g); err != nil {
		h.fail(w, err)
		return
	}
	out, err := h.c.SetGate(r.Context(), r.PathValue("index"), &g)
	h.reply(w, out, err)
}

func (h *handler) removeGate(w http.ResponseWriter, r *http.Request) {
	if err := h.c.RemoveGate(r.Context(), r.PathValue("index")); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(204)
}

// putEvents takes user events: a JSON array, or NDJSON (one event a
// line). A bad event refuses the whole body, naming it.
func (h *handler) putEvents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSearchBody))
	if err != nil {
		h.fail(w, err)
		return
	}
	var evs []api.UserEvent
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if err := api.DecodeStrict("events", b, &evs); err != nil {
			h.fail(w, err)
			return
		}
	} else {
		for i, line := range bytes.Split(body, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			var e api.UserEvent
			if err := api.DecodeStrict("event", line, &e); err != nil {
				h.fail(w, api.BadRequest("line %d: %v", i+1, err))
				return
			}
			evs = append(evs, e)
		}
	}
	res, err := h.c.PutEvents(r.Context(), r.PathValue("index"), evs)
	h.reply(w, res, err)
}
