package wire

import (
	"encoding/json"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
)

// ErrorReply is the message that answers a request at reply with e, as a
// micro service's error reply is (the Nats-Service-Error headers, with
// the HTTP-like status) with e as its JSON body: what the client reads
// whether micro or a service's own goroutine sent it.
func ErrorReply(reply string, e *api.Error) *nats.Msg {
	body, _ := json.Marshal(e)
	msg := &nats.Msg{Subject: reply, Data: body, Header: nats.Header{}}
	msg.Header.Set(micro.ErrorHeader, e.Message)
	msg.Header.Set(micro.ErrorCodeHeader, strconv.Itoa(api.HTTPStatus(e.Code)))
	return msg
}
