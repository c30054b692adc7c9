package httpapi

import (
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/quarrysearch/quarry/api"
)

// CodeUnsupportedMediaType: a request body without the Content-Type its
// route takes. HTTP 415.
const CodeUnsupportedMediaType api.Code = "unsupported_media_type"

// The Content-Types a route's body may have: JSON (most routes), NDJSON
// or JSON (documents, judgement lists, events), a WebAssembly module
// (plugin pushes), a merge patch or JSON (a document's partial update). None of them is one a web page may send to another
// site without asking first (a CORS preflight, which only the origins
// the door allows pass): text/plain, forms and multipart are refused.
var (
	jsonBody   = []string{"application/json"}
	ndjsonBody = []string{"application/x-ndjson", "application/json"}
	wasmBody   = []string{"application/wasm", "application/octet-stream"}
	// A document's partial update: a JSON merge patch (RFC 7386).
	patchBody = []string{"application/merge-patch+json", "application/json"}
)

// bodyType refuses, with 415, a POST, PUT, PATCH or DELETE whose body
// (any, even one of unknown length) has no Content-Type or one not in
// types; parameters (charset=utf-8) are ignored. A request without a
// body passes.
func bodyType(r *http.Request, types []string) error {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil
	}
	if r.ContentLength == 0 {
		return nil
	}
	got := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(got)
	if err == nil && slices.Contains(types, mt) {
		return nil
	}
	if got == "" {
		got = "none"
	} else {
		got = "Content-Type " + got
	}
	return &api.Error{Code: CodeUnsupportedMediaType, Message: r.Method + " " + r.URL.Path + " takes a body of Content-Type " + strings.Join(types, " or ") + " (curl: -H 'Content-Type: " + types[0] + "'); got " + got}
}
