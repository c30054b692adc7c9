package httpapi

import (
	"net/http"

	"github.com/quarrysearch/quarry/api"
)

// aliasBody is the body of POST and PUT /v1/aliases/{alias}: the index
// the alias is to point at.
type aliasBody struct {
	Index string `json:"index"`
}

// listAliases answers GET /v1/aliases: {"aliases": [...]}.
func (h *handler) listAliases(w http.ResponseWriter, r *http.Request) {
	as, err := h.c.Aliases(r.Context())
	if err != nil {
		h.fail(w, err)
		return
	}
	if as == nil {
		as = []api.Alias{}
	}
	writeJSON(w, 200, map[string]any{"aliases": as})
}

// getAlias answers GET /v1/aliases/{alias}.
func (h *handler) getAlias(w http.ResponseWriter, r *http.Request) {
	a, err := h.c.Alias(r.Context(), r.PathValue("alias"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, 200, a)
}

// createAlias answers POST /v1/aliases/{alias} {"index": …} (201), and
// switchAlias PUT (200): an alias made, or moved at once to another
// index of its team.
func (h *handler) createAlias(w http.ResponseWriter, r *http.Request) { h.setAlias(w, r, false) }
func (h *handler) switchAlias(w http.ResponseWriter, r *http.Request) { h.setAlias(w, r, true) }

func (h *handler) setAlias(w http.ResponseWriter, r *http.Request, move bool) {
	var body aliasBody
	if err := decodeBody(w, r, "alias", &body); err != nil {
		h.fail(w, err)
		return
	}
	if body.Index == "" {
		h.fail(w, api.BadRequest(`alias: give the index it points at: {"index": "NAME"}`))
		return
	}
	set, code := h.c.CreateAlias, 201
	if move {
		set, code = h.c.SwitchAlias, 200
	}
	a, err := set(r.Context(), r.PathValue("alias"), body.Index)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, code, a)
}

// removeAlias answers DELETE /v1/aliases/{alias} (204).
func (h *handler) removeAlias(w http.ResponseWriter, r *http.Request) {
	if err := h.c.DeleteAlias(r.Context(), r.PathValue("alias")); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(204)
}
