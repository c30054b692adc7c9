package service_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/service"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// An endpoint answered on another goroutine, after its handler returned,
// is counted from arrival to answer, its errors included; the protocol's
// PING, INFO and STATS answer by name and id; Stop ends them.
func TestService(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Conn(t, "svc")
	var ep *service.Endpoint
	ep = &service.Endpoint{Name: "echo", Subject: "echo.*", Metadata: map[string]string{"k": "v"}, Handler: func(m *nats.Msg) {
		arrived := time.Now()
		go func() { // answered later, as a worker does
			time.Sleep(20 * time.Millisecond)
			if m.Subject == "echo.bad" {
				e := &api.Error{Code: api.CodeBadRequest, Message: "bad echo"}
				_ = m.Respond(nil)
				ep.Done(arrived, e)
				return
			}
			_ = m.Respond(m.Data)
			ep.Done(arrived, nil)
		}()
	}}
	svc, err := service.Start(nc, service.Config{Name: "echoes", Version: "1.0.0", Description: "echoes"}, ep)
	if err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"echo.a", "echo.b", "echo.bad"} {
		if _, err := srv.NC.Request(subj, []byte("hi"), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// A request is answered before its owner counts it (Done, after the
	// reply): the third may not be counted yet when its reply arrives.
	var stats micro.Stats
	testwait.Until(t, 5*time.Second, "the three requests counted", func() bool {
		stats = micro.Stats{}
		ask(t, srv.NC, "$SRV.STATS.echoes."+svc.ID(), &stats)
		return len(stats.Endpoints) == 1 && stats.Endpoints[0].NumRequests >= 3
	})
	if stats.Type != micro.StatsResponseType || len(stats.Endpoints) != 1 {
		t.Fatalf("stats: %+v", stats)
	}
	e := stats.Endpoints[0]
	if e.NumRequests != 3 || e.NumErrors != 1 || e.LastError != "400:bad echo" || e.AverageProcessingTime < 20*time.Millisecond || e.QueueGroup != micro.DefaultQueueGroup {
		t.Fatalf("endpoint stats: %+v", e)
	}
	var info micro.Info
	ask(t, srv.NC, "$SRV.INFO.echoes", &info)
	if info.Description != "echoes" || len(info.Endpoints) != 1 || info.Endpoints[0].Subject != "echo.*" || info.Endpoints[0].Metadata["k"] != "v" {
		t.Fatalf("info: %+v", info)
	}
	var ping micro.Ping
	ask(t, srv.NC, "$SRV.PING", &ping)
	if ping.Name != "echoes" || ping.ID != svc.ID() || ping.Version != "1.0.0" {
		t.Fatalf("ping: %+v", ping)
	}
	if err := svc.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if _, err := srv.NC.Request("$SRV.PING.echoes", nil, 200*time.Millisecond); err == nil {
		t.Fatal("a stopped service answered PING")
	}
}

// ask requests subj and decodes its answer into v.
func ask(t *testing.T, nc *nats.Conn, subj string, v any) {
	t.Helper()
	m, err := nc.Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subj, err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("%s: %s: %v", subj, m.Data, err)
	}
}
