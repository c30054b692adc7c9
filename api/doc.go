// Package api holds Quarry's public wire types: the search request and
// response, index definitions, documents and errors. The same JSON travels
// over NATS (quarry.v1.search.<index>) and HTTP
// (POST /v1/indexes/{index}/search), so these types are the contract both
// the Go client and any other-language client code against.
package api
