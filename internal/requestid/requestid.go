// Package requestid is a search request's identity: an id carried in a
// context, in a header on every NATS message about the request
// (X-Request-Id over HTTP) and in every log line about it. It needs the
// standard library alone, so the Go client carries ids without linking a
// tracer; package trace adds spans beside it.
package requestid

import (
	"context"
	"crypto/rand"
)

// Header carries a request's id on NATS messages (and X-Request-Id over
// HTTP).
const Header = "Quarry-Request-Id"

// MaxBytes caps a request id a caller gives; a longer one is replaced.
const MaxBytes = 128

type key struct{}

// With returns ctx carrying a request id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns ctx's request id, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// New makes a request id.
func New() string { return rand.Text() }

// Valid reports whether a caller's request id can be used as is: 1 to
// MaxBytes printable ASCII characters.
func Valid(id string) bool {
	if id == "" || len(id) > MaxBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
