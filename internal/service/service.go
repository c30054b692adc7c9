// Package service serves a NATS service in the protocol of nats.go's
// micro (`nats micro ls`, `info`, `stats`: $SRV.PING, $SRV.INFO and
// $SRV.STATS, by name and by id, in micro's own types) for services that
// answer a request after its handler has returned: from a pool of workers
// (the broker's searches) or from a team's lane (the admin API).
//
// micro.AddService counts a request from when its handler is called to
// when it returns, on the subscription's one goroutine; a handler that
// hands the request on returns at once, so micro showed microseconds and
// no errors while searches took milliseconds and some failed. Here each
// endpoint's figures are what its owner reports with Endpoint.Done, from
// a request's arrival to its answer (docs/RATIONALE.md, "One admission
// type, and a broker that answers from workers").
package service

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
)

// Config names a service.
type Config struct {
	// Name, Version and Description are what `nats micro info` shows.
	Name, Version, Description string
	// ID is this instance's id (default: a new NUID).
	ID string
	// QueueGroup is every endpoint's queue group (default micro's, "q").
	QueueGroup string
	// Logger logs the protocol's answers that fail (default slog's).
	Logger *slog.Logger
}

// An Endpoint is one subject the service answers on. Its handler runs on
// the subscription's goroutine and must not block: it hands the request
// on, and whoever answers it calls Done.
type Endpoint struct {
	Name, Subject string
	Metadata      map[string]string
	Handler       nats.MsgHandler

	queueGroup                     string
	sub                            *nats.Subscription
	requests, errors, processingNS atomic.Int64
	lastError                      atomic.Pointer[string]
}

// Done counts one request that arrived at arrived and has been answered
// (or dropped): failed is the error it was answered with, nil if none.
// The request is counted last, after its error and time, and stats reads
// the count first: figures read while a request is being counted never
// count an error without its message, nor a request without its time.
func (e *Endpoint) Done(arrived time.Time, failed *api.Error) {
	if failed != nil {
		msg := fmt.Sprintf("%d:%s", api.HTTPStatus(failed.Code), failed.Message)
		e.lastError.Store(&msg)
		e.errors.Add(1)
	}
	e.processingNS.Add(int64(time.Since(arrived)))
	e.requests.Add(1)
}

// stats is the endpoint's figures as micro reports them.
func (e *Endpoint) stats() *micro.EndpointStats {
	requests := e.requests.Load() // first: see Done
	s := &micro.EndpointStats{Name: e.Name, Subject: e.Subject, QueueGroup: e.queueGroup,
		NumRequests: int(requests), NumErrors: int(e.errors.Load()), ProcessingTime: time.Duration(e.processingNS.Load())}
	if s.NumRequests > 0 {
		s.AverageProcessingTime = s.ProcessingTime / time.Duration(s.NumRequests)
	}
	if msg := e.lastError.Load(); msg != nil {
		s.LastError = *msg
	}
	return s
}

// A Service is a started service: its endpoints' subscriptions and the
// protocol's.
type Service struct {
	cfg       Config
	identity  micro.ServiceIdentity
	started   time.Time
	endpoints []*Endpoint
	control   []*nats.Subscription
	stopOnce  sync.Once
	stopErr   error
}

// Start subscribes every endpoint (in cfg.QueueGroup) and the protocol's
// subjects on nc, and returns once the server has them.
func Start(nc *nats.Conn, cfg Config, endpoints ...*Endpoint) (*Service, error) {
	if cfg.ID == "" {
		cfg.ID = nuid.Next()
	}
	if cfg.QueueGroup == "" {
		cfg.QueueGroup = micro.DefaultQueueGroup
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, started: time.Now().UTC(), endpoints: endpoints,
		identity: micro.ServiceIdentity{Name: cfg.Name, ID: cfg.ID, Version: cfg.Version, Metadata: map[string]string{}}}
	for _, e := range endpoints {
		e.queueGroup = cfg.QueueGroup
		sub, err := nc.QueueSubscribe(e.Subject, cfg.QueueGroup, e.Handler)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("%s: subscribe %s: %w", cfg.Name, e.Subject, err)
		}
		e.sub = sub
	}
	for verb, answer := range map[micro.Verb]func() any{micro.PingVerb: s.ping, micro.InfoVerb: s.info, micro.StatsVerb: s.stats} {
		for _, who := range [][2]string{{"", ""}, {cfg.Name, ""}, {cfg.Name, cfg.ID}} {
			subj, err := micro.ControlSubject(verb, who[0], who[1])
			if err != nil {
				s.Stop()
				return nil, fmt.Errorf("%s: %s subject: %w", cfg.Name, verb, err)
			}
			sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
				data, err := json.Marshal(answer())
				if err == nil {
					err = m.Respond(data)
				}
				if err != nil {
					cfg.Logger.Warn("service protocol answer failed", "service", cfg.Name, "subject", m.Subject, "err", err)
				}
			})
			if err != nil {
				s.Stop()
				return nil, fmt.Errorf("%s: subscribe %s: %w", cfg.Name, subj, err)
			}
			s.control = append(s.control, sub)
		}
	}
	// Answering once Start returns: a request on another connection
	// finds the subscriptions (without this, now and then it found no
	// responders).
	if err := nc.Flush(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%s: subscribe: %w", cfg.Name, err)
	}
	return s, nil
}

// ID is the instance's id.
func (s *Service) ID() string { return s.identity.ID }

func (s *Service) ping() any {
	return micro.Ping{ServiceIdentity: s.identity, Type: micro.PingResponseType}
}

func (s *Service) info() any {
	eps := make([]micro.EndpointInfo, len(s.endpoints))
	for i, e := range s.endpoints {
		eps[i] = micro.EndpointInfo{Name: e.Name, Subject: e.Subject, QueueGroup: e.queueGroup, Metadata: e.Metadata}
	}
	return micro.Info{ServiceIdentity: s.identity, Type: micro.InfoResponseType, Description: s.cfg.Description, Endpoints: eps}
}

func (s *Service) stats() any {
	eps := make([]*micro.EndpointStats, len(s.endpoints))
	for i, e := range s.endpoints {
		eps[i] = e.stats()
	}
	return micro.Stats{ServiceIdentity: s.identity, Type: micro.StatsResponseType, Started: s.started, Endpoints: eps}
}

// Stop drains the endpoints' subscriptions (requests already delivered
// still reach their handlers) and ends the protocol's. It may be called
// more than once.
func (s *Service) Stop() error {
	s.stopOnce.Do(func() {
		for _, e := range s.endpoints {
			if e.sub != nil {
				if err := e.sub.Drain(); err != nil && s.stopErr == nil {
					s.stopErr = err
				}
			}
		}
		for _, sub := range s.control {
			_ = sub.Unsubscribe()
		}
	})
	return s.stopErr
}
