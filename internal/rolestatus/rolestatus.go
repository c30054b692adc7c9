// Package rolestatus registers a role's micro service for discovery: a
// searcher or an indexer process appears in `nats micro ls` with its
// version, and its one endpoint, status, answers (and reports in `nats
// micro stats`) what the role says of itself, an api.RoleStatus.
package rolestatus

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/internal/subject"
)

// Serve registers the micro service name (version, description) for the
// process id, with a status endpoint on subject.Status(name, id) whose
// answer and stats data are status(). Stop the returned service when the
// role ends.
func Serve(nc *nats.Conn, name, version, description, id string, status func() any) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{Name: name, Version: version, Description: description,
		StatsHandler: func(*micro.Endpoint) any { return status() }})
	if err != nil {
		return nil, fmt.Errorf("%s: add service: %w", name, err)
	}
	err = svc.AddEndpoint("status", micro.HandlerFunc(func(req micro.Request) {
		raw, err := json.Marshal(status())
		if err != nil {
			req.Error("500", err.Error(), nil)
			return
		}
		req.Respond(raw)
	}), micro.WithEndpointSubject(subject.Status(name, id)))
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("%s: add status endpoint: %w", name, err)
	}
	return svc, nil
}
