// Package httpapi serves Quarry's JSON API over HTTP. Every handler is a
// thin shim over the Go client, so HTTP and NATS callers get the same
// answers and the same errors.
//
//	GET    /v1/indexes                      list indexes
//	POST   /v1/indexes/{index}              create: {"shards":N,"mapping":{...}}
//	GET    /v1/indexes/{index}              definition, live document count, snapshot status
//	DELETE /v1/indexes/{index}              delete
//	POST   /v1/indexes/{index}/search       SearchRequest → SearchResponse
//	POST   /v1/indexes/{index}/documents    NDJSON upserts (?snapshot=true to publish a generation)
//	GET    /v1/indexes/{index}/documents/{id}  the document as written (from the stream)
//	DELETE /v1/indexes/{index}/documents/{id}
//	GET    /v1/indexes/{index}/info         a team's view of its index: snapshot, shards, replicas
//	GET    /v1/indexes/{index}/pipeline/history  the pipeline's kept revisions
//	GET    /v1/indexes/{index}/queries      top, zero-result and slow queries from the brokers' logs
//	GET    /v1/roles                        micro services and searcher replicas on NATS (operators)
//	GET    /v1/me                           who the token is and the indexes it may use
//	GET    /healthz                         alive
//	GET    /                                the console (internal/console)
package httpapi
