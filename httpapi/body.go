package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// timedBody is a request body whose every read waits at most wait for
// the client (Options.BodyTimeout), through the connection's read
// deadline. Once the body has been read to its end the deadline is
// lifted: the server goes on reading the connection in the background
// to notice a client that hangs up, and a deadline left there would end
// the request's context during a long search.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	wait time.Duration
	done bool
}

// newTimedBody wraps body, its first wait starting now.
func newTimedBody(w http.ResponseWriter, body io.ReadCloser, wait time.Duration) *timedBody {
	b := &timedBody{ReadCloser: body, rc: http.NewResponseController(w), wait: wait}
	b.rc.SetReadDeadline(time.Now().Add(wait))
	return b
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	b.rc.SetReadDeadline(time.Now().Add(b.wait))
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return n, &bodyError{fmt.Sprintf("the request body stopped coming: nothing for %s", b.wait)}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, &bodyError{"the request body ended before its length: the client stopped sending it"}
		}
	}
	return n, err
}

// bodyError is a request body the client did not send in full: its
// fault, answered 400, not an internal error.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return e.msg }
