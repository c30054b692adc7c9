package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// The OpenAPI 3.1 document of the HTTP API, served at GET /openapi.json.
// It is made from the routes Handler serves (register), so a route
// cannot be served undescribed: each has its entry in operations (its
// summary, parameters, bodies), and TestOpenAPI holds the two to each
// other and every error code to the document. The bodies' schemas are
// read from the Go types the handlers decode and encode (their json
// tags), so they follow the types.

// operation describes one route.
type operation struct {
	summary string
	// query lists the route's query parameters: "name: description".
	query []string
	// request is the JSON body's type (nil: none, or not JSON: body).
	request reflect.Type
	// body describes a body that is not one JSON value (NDJSON, wasm).
	body string
	// response is the success body's type (nil: none, or not JSON);
	// status its status (default 200).
	response reflect.Type
	status   int
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// listOf is the type of {"<name>": [T]}: a list under one key.
func listOf[T any](name string) reflect.Type {
	return reflect.StructOf([]reflect.StructField{{Name: "List", Type: reflect.TypeFor[[]T](), Tag: reflect.StructTag(`json:"` + name + `"`)}})
}

// seqReply is the body of a write answered with its stream sequence.
type seqReply struct {
	Seq uint64 `json:"seq"`
}

// operations describes every route of register, by pattern.
var operations = map[string]operation{
	"GET /healthz":      {summary: "Liveness: answers ok while the process serves HTTP."},
	"GET /openapi.json": {summary: "This document."},
	"GET /v1/indexes":   {summary: "List every index (operators).", response: listOf[api.IndexDefinition]("indexes")},
	"POST /v1/indexes/{index}": {summary: "Create an index (operators): shards, team, bleve mapping, query settings, document limits.",
		request: typeOf[indexBody](), response: typeOf[api.IndexDefinition](), status: 201},
	"GET /v1/indexes/{index}":       {summary: "An index's definition, live document count and current snapshot (operators).", response: typeOf[client.IndexStatus]()},
	"DELETE /v1/indexes/{index}":    {summary: "Delete an index and everything kept under its name (operators); refused while an alias points at it.", status: 204},
	"PUT /v1/indexes/{index}/query": {summary: "Replace an index's query settings (operators).", request: typeOf[api.QuerySettings](), response: typeOf[api.IndexDefinition]()},
	"PUT /v1/indexes/{index}/mapping": {summary: "Change an index's mapping in place (operators): the whole new bleve mapping, which may only add fields no document holds yet, types and analysis components; any other change takes a reindex.",
		request: typeOf[json.RawMessage](), response: typeOf[api.IndexDefinition]()},
	"POST /v1/indexes/{index}/search": {summary: "Search an index (or alias): the request as JSON (docs/api.md, Request).", request: typeOf[api.SearchRequest](), response: typeOf[api.SearchResponse]()},
	"GET /v1/indexes/{index}/search": {summary: "Search with URL parameters: the simple cases of the JSON request.",
		query: []string{"q: the text to search", "size: hits to return", "from: hits to skip", "timeout_ms: the request's deadline",
			"fields: stored fields, comma-separated", "sort: sort fields, comma-separated", "search_after: a sorted response's next",
			"scoring: exact or shard", "profile: true for per-stage timings", "explain: true for score explanations",
			"typos: true or false, typo tolerance for this request", "prefix: true or false, search as you type for this request",
			"suggest: a field whose words complete q's last word (the response's suggestions)"},
		response: typeOf[api.SearchResponse]()},
	"POST /v1/indexes/{index}/documents": {summary: "Bulk-load documents: NDJSON, a JSON array, or Elasticsearch's bulk lines (format=es).",
		query: []string{"format: es for Elasticsearch's bulk action lines", "wait: searchable to answer once a search finds every document",
			"snapshot: true to publish a snapshot at the end"},
		body: "application/x-ndjson", response: typeOf[client.BulkResult]()},
	"GET /v1/indexes/{index}/documents/{id}":    {summary: "Read one document, exactly as it was written, from the stream; its sequence in the Quarry-Seq and ETag headers.", response: typeOf[json.RawMessage]()},
	"DELETE /v1/indexes/{index}/documents/{id}": {summary: "Delete one document (a tombstone).", response: typeOf[seqReply]()},
	"PATCH /v1/indexes/{index}/documents/{id}": {summary: "Change part of one document: a JSON merge patch, applied atomically (If-Match: an ETag for optimistic concurrency).",
		body: "application/merge-patch+json", response: typeOf[seqReply]()},
	"GET /v1/indexes/{index}/documents":    {summary: "Read one document named by ?id= (an id no path segment can carry), as GET …/documents/{id}.", query: []string{"id: the document's id"}, response: typeOf[json.RawMessage]()},
	"DELETE /v1/indexes/{index}/documents": {summary: "Delete one document named by ?id=.", query: []string{"id: the document's id"}, response: typeOf[seqReply]()},
	"PATCH /v1/indexes/{index}/documents": {summary: "Patch one document named by ?id=.", query: []string{"id: the document's id"},
		body: "application/merge-patch+json", response: typeOf[seqReply]()},
	"POST /v1/indexes/{index}/delete-by-query": {summary: "Delete every document a query finds, in rounds.", request: typeOf[client.DeleteQuery](), response: typeOf[client.DeleteResult]()},
	"GET /v1/indexes/{index}/plugins":          {summary: "The index's pushed plugin versions and its live pipeline.", response: typeOf[client.PluginList]()},
	"POST /v1/indexes/{index}/plugins/{name}": {summary: "Push a plugin version (a WebAssembly module): validated, and activated if asked.",
		query: []string{"kind: rewriter or ranker", "activate: true to put it live (through the gate)", "policy: fail_open or fail_closed",
			"fields: the stored fields a ranker reads, comma-separated", "config: the plugin's configuration, JSON",
			"budget_ms: a call's time budget", "latency_budget_ms: the step's p99 budget", "rerank_depth: a ranker's candidates",
			"instances: warm instances", "force: true to skip the gate (with activate)", "reason: why the gate is skipped"},
		body: "application/wasm", response: typeOf[api.PluginVersion]()},
	"POST /v1/indexes/{index}/plugins/{name}/activate": {summary: "Put a pushed version live (through the index's relevance gate).",
		query: []string{"digest: the version", "force: true to skip the gate", "reason: why the gate is skipped"}, response: typeOf[api.PipelineSpec]()},
	"DELETE /v1/indexes/{index}/plugins/{name}": {summary: "Take a plugin out of the pipeline.", response: typeOf[api.PipelineSpec]()},
	"POST /v1/indexes/{index}/plugins/{name}/canary": {summary: "Send a share of the traffic to a version (or interleave it with the live one).",
		query: []string{"digest: the version", "percent: the share, 1-100", "sticky: the context key a user's share follows",
			"interleave: true for team-draft interleaving (rankers)", "max_queries: interleaved searches before the test's verdict"},
		response: typeOf[api.PipelineSpec]()},
	"GET /v1/indexes/{index}/plugins/{name}/canary":   {summary: "A canary's figures beside the live version's.", response: typeOf[api.CanaryStats]()},
	"POST /v1/indexes/{index}/plugins/{name}/promote": {summary: "Make the canary the live version.", query: []string{"force: true to skip the gate", "reason: why"}, response: typeOf[api.PipelineSpec]()},
	"POST /v1/indexes/{index}/plugins/{name}/shadow": {summary: "Run a version beside the live one on a share of the traffic, its answers compared, not served.",
		query: []string{"digest: the version", "percent: the share, 1-100"}, response: typeOf[api.PipelineSpec]()},
	"GET /v1/indexes/{index}/plugins/{name}/shadow": {summary: "A shadow's comparison with the live version.", response: typeOf[api.ShadowStats]()},
	"GET /v1/indexes/{index}/plugins/{name}/logs":   {summary: "A plugin's recent log lines.", query: []string{"version: a digest", "since: RFC 3339 time or duration"}, response: typeOf[api.PluginLogs]()},
	"GET /v1/indexes/{index}/events":                {summary: "Plugin events (automatic fallbacks).", response: typeOf[[]api.PluginEvent]()},
	"GET /v1/indexes/{index}/pipeline":              {summary: "The live pipeline.", response: typeOf[api.PipelineSpec]()},
	"PUT /v1/indexes/{index}/pipeline":              {summary: "Replace the pipeline (through the gate).", request: typeOf[api.PipelineSpec](), response: typeOf[api.PipelineSpec]()},
	"POST /v1/indexes/{index}/pipeline/rollback":    {summary: "Put the previous pipeline back.", response: typeOf[api.PipelineSpec]()},
	"GET /v1/indexes/{index}/pipeline/history":      {summary: "The pipeline's revisions, newest first.", response: typeOf[[]api.PipelineSpec]()},
	"GET /v1/indexes/{index}/info":                  {summary: "What a team may read of its index: definition, snapshot, serving replicas, aliases.", response: typeOf[api.IndexInfo]()},
	"GET /v1/indexes/{index}/queries":               {summary: "The brokers' query report: top, zero-result and slowest searches.", response: typeOf[api.QueryReport]()},
	"GET /v1/indexes/{index}/rejected":              {summary: "Documents the stream acknowledged that the indexer could not apply.", query: []string{"limit: the newest this many"}, response: typeOf[[]api.RejectedDocument]()},
	"GET /v1/aliases":                               {summary: "List every alias (operators).", response: listOf[api.Alias]("aliases")},
	"GET /v1/aliases/{alias}":                       {summary: "One alias (operators).", response: typeOf[api.Alias]()},
	"POST /v1/aliases/{alias}":                      {summary: "Make an alias point at an index (operators).", request: typeOf[aliasBody](), response: typeOf[api.Alias](), status: 201},
	"PUT /v1/aliases/{alias}":                       {summary: "Switch an alias to another index of its team, at once (operators).", request: typeOf[aliasBody](), response: typeOf[api.Alias]()},
	"DELETE /v1/aliases/{alias}":                    {summary: "Remove an alias; its index stays (operators).", status: 204},
	"GET /v1/roles":                                 {summary: "The roles serving the deployment (operators).", response: typeOf[api.Roles]()},
	"GET /v1/me":                                    {summary: "Who the token is: team, scope, the indexes it may use.", response: typeOf[Identity]()},
	"GET /v1/indexes/{index}/judgements":            {summary: "The index's judgement lists.", response: typeOf[[]api.JudgementSet]()},
	"PUT /v1/indexes/{index}/judgements/{name}":     {summary: "Push a judgement list (NDJSON of query, id, grade).", body: "application/x-ndjson", response: typeOf[api.JudgementSet](), status: 201},
	"GET /v1/indexes/{index}/judgements/{name}":     {summary: "One judgement list.", query: []string{"version: an earlier version"}, response: typeOf[api.JudgementSet]()},
	"DELETE /v1/indexes/{index}/judgements/{name}":  {summary: "Remove a judgement list.", status: 204},
	"POST /v1/indexes/{index}/judgements/{name}/eval": {summary: "Measure the live pipeline, and a candidate, on a judgement list (nDCG, MRR, P@k, R@k).",
		request: typeOf[api.EvalRequest](), response: typeOf[api.EvalReport]()},
	"POST /v1/indexes/{index}/events": {summary: "Store what users did with search results (NDJSON of user events).", body: "application/x-ndjson", response: typeOf[api.EventsResult]()},
	"GET /v1/indexes/{index}/gate":    {summary: "The index's relevance gate.", response: typeOf[api.Gate]()},
	"PUT /v1/indexes/{index}/gate":    {summary: "Set the relevance gate.", request: typeOf[api.Gate](), response: typeOf[api.Gate]()},
	"DELETE /v1/indexes/{index}/gate": {summary: "Remove the relevance gate.", status: 204},
}

// route is one registered route: what register gives its routeFunc.
type route struct {
	pattern string
	access  access
	types   []string
}

// routes lists the routes register registers, in its order.
func routes() []route {
	var out []route
	(&handler{}).register(func(pattern string, a access, _ http.HandlerFunc, types ...string) {
		if len(types) == 0 {
			types = jsonBody
		}
		out = append(out, route{pattern, a, types})
	}, nil)
	return out
}

// errorCodes are the codes of the API's errors, each with its HTTP
// status (api.HTTPStatus, and this package's own).
func errorCodes() []api.Code {
	return []api.Code{api.CodeBadRequest, api.CodeNotFound, api.CodeConflict, api.CodeUnauthorized, api.CodeForbidden,
		api.CodeUnavailable, api.CodeOverloaded, api.CodeTimeout, api.CodeInternal, api.CodeQueryTooComplex,
		api.CodeResponseTooLarge, api.CodeDocumentTooComplex, api.CodeGateFailed, api.CodeGateRunning,
		api.CodeInsufficientStorage, CodeMethodNotAllowed, CodeUnsupportedMediaType}
}

var (
	openAPIOnce sync.Once
	openAPIDoc  []byte
)

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API.
func OpenAPI() []byte {
	openAPIOnce.Do(func() {
		doc, err := json.MarshalIndent(buildOpenAPI(), "", "  ")
		if err != nil {
			panic("openapi: " + err.Error()) // made of the package's own types
		}
		openAPIDoc = doc
	})
	return openAPIDoc
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(OpenAPI())
}

type obj = map[string]any

func buildOpenAPI() obj {
	g := &schemas{defs: obj{}, names: map[reflect.Type]string{}}
	codes := errorCodes()
	enum := make([]string, len(codes))
	for i, c := range codes {
		enum[i] = string(c)
	}
	errSchema := g.of(typeOf[api.Error]())
	g.defs["ErrorBody"] = obj{"type": "object", "required": []string{"error"}, "properties": obj{"error": errSchema},
		"description": "Every error's body. error.code is one of: " + strings.Join(enum, ", ") + "."}
	// One response per status, naming the codes answered with it.
	byStatus := map[int][]string{}
	for _, c := range codes {
		byStatus[status(c)] = append(byStatus[status(c)], string(c))
	}
	responses := obj{}
	for st, cs := range byStatus {
		responses[errorResponse(st)] = obj{"description": "an error: code " + strings.Join(cs, " or "),
			"content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/ErrorBody"}}}}
	}
	paths := obj{}
	for _, rt := range routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		op := operations[rt.pattern]
		o := obj{"summary": op.summary, "operationId": operationID(method, path)}
		var params []obj
		for _, seg := range strings.Split(path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				params = append(params, obj{"name": strings.TrimSuffix(name, "}"), "in": "path", "required": true, "schema": obj{"type": "string"}})
			}
		}
		for _, q := range op.query {
			name, desc, _ := strings.Cut(q, ": ")
			params = append(params, obj{"name": name, "in": "query", "description": desc, "schema": obj{"type": "string"}})
		}
		if params != nil {
			o["parameters"] = params
		}
		switch {
		case op.request != nil:
			o["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": g.of(op.request)}}}
		case op.body != "":
			content := obj{}
			for _, t := range rt.types {
				content[t] = obj{"schema": obj{"type": "string", "contentMediaType": t}}
			}
			o["requestBody"] = obj{"required": true, "content": content}
		}
		status := op.status
		if status == 0 {
			status = 200
		}
		ok := obj{"description": "success"}
		if op.response != nil {
			ok["content"] = obj{"application/json": obj{"schema": g.of(op.response)}}
		}
		rs := obj{itoa(status): ok}
		for _, st := range routeErrors(rt, op) {
			rs[itoa(st)] = obj{"$ref": "#/components/responses/" + errorResponse(st)}
		}
		o["responses"] = rs
		if rt.access.who != anyone {
			o["security"] = []obj{{"bearer": []string{}}}
			o["description"] = accessText(rt.access)
		}
		p, _ := paths[path].(obj)
		if p == nil {
			p = obj{}
			paths[path] = p
		}
		p[strings.ToLower(method)] = o
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{"title": "Quarry HTTP API", "version": api.Version,
			"description": "The same JSON as the NATS request API (docs/api.md). With --http-auth, a request carries a token: Authorization: Bearer <token> (quarry token create)."},
		"paths": paths,
		"components": obj{
			"schemas":         g.defs,
			"responses":       responses,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer", "description": "quarry token create; needed with --http-auth"}},
		},
	}
}

// errorResponse names the components' response of an error status.
func errorResponse(status int) string { return "Error" + itoa(status) }

// routeErrors are the HTTP statuses of the errors a route can answer
// with.
func routeErrors(rt route, op operation) []int {
	if rt.pattern == "GET /healthz" || rt.pattern == "GET /openapi.json" {
		return nil
	}
	codes := []api.Code{api.CodeBadRequest, api.CodeUnavailable, api.CodeOverloaded, api.CodeTimeout, api.CodeInternal}
	if rt.access.who != anyone {
		codes = append(codes, api.CodeUnauthorized, api.CodeForbidden)
	}
	if strings.Contains(rt.pattern, "{") {
		codes = append(codes, api.CodeNotFound)
	}
	method, _, _ := strings.Cut(rt.pattern, " ")
	if method != "GET" {
		codes = append(codes, api.CodeConflict, CodeUnsupportedMediaType)
	}
	if op.body != "" || strings.Contains(rt.pattern, "/documents") || strings.Contains(rt.pattern, "/events") {
		codes = append(codes, api.CodeInsufficientStorage)
	}
	if strings.Contains(rt.pattern, "/plugins/") || strings.Contains(rt.pattern, "/pipeline") || strings.Contains(rt.pattern, "/gate") {
		codes = append(codes, api.CodeGateFailed, api.CodeGateRunning)
	}
	var out []int
	for _, c := range codes {
		if st := status(c); !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	slices.Sort(out)
	return out
}

func accessText(a access) string {
	switch a.who {
	case operators:
		return "Operator tokens only."
	case knownToken:
		return "Any known token."
	}
	return "An operator's token, or a token of the index's team of scope " + a.scope + " or wider."
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '.' || r == '_' }) {
			if part == "v1" {
				continue
			}
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// schemas makes JSON Schemas of Go types, as encoding/json writes them
// (their json tags), each named struct once, under components/schemas.
type schemas struct {
	defs  obj
	names map[reflect.Type]string
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	durType  = reflect.TypeFor[time.Duration]()
)

func (g *schemas) of(t reflect.Type) obj {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return obj{"type": "string", "format": "date-time"}
	case t == rawType:
		return obj{"description": "any JSON value"}
	case t == durType:
		return obj{"type": "integer", "description": "nanoseconds"}
	}
	switch t.Kind() {
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return obj{"type": "string", "contentEncoding": "base64"}
		}
		return obj{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name, ok := g.names[t]
		if !ok {
			name = t.Name()
			for _, other := range g.names {
				if other == name { // two packages' types of one name
					name = strings.ReplaceAll(t.String(), ".", "")
					name = strings.ToUpper(name[:1]) + name[1:]
				}
			}
			g.names[t] = name
			g.defs[name] = g.object(t)
		}
		return obj{"$ref": "#/components/schemas/" + name}
	}
	return obj{"description": "any JSON value"}
}

// object is the schema of a struct's JSON object: its exported fields
// by their json names, those without omitempty or omitzero required,
// embedded structs' fields in place.
func (g *schemas) object(t reflect.Type) obj {
	props := obj{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			props[name] = g.of(f.Type)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
	}
	walk(t)
	o := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}
