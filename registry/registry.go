package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/service"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/plugins"
)

// Config configures the admin service.
type Config struct {
	// Plugins are the limits plugins are validated under.
	Plugins plugins.Config
	Logger  *slog.Logger
	// Registerer gets the service's Prometheus metrics (nil: a registry
	// of its own, which nothing serves).
	Registerer prometheus.Registerer
	// GateTimeout bounds one relevance gate (an activation's, a
	// promotion's, a pipeline.set's), which runs as a job of the
	// service, at most one per index (0: DefaultGateTimeout, 30 min): a
	// gate still running then refuses the change.
	GateTimeout time.Duration
	// GateWait is how long the change's request waits for its gate (0:
	// DefaultGateWait, 20 s) before it answers gate_running and the gate
	// goes on in the background; it should be well under the admin
	// request's minute.
	GateWait time.Duration
}

// RequestTimeout is the deadline of one admin request, its wait for its
// team's lane included.
const RequestTimeout = time.Minute

// Service serves the admin API.
type Service struct {
	ready chan struct{} // see Ready
	nc    *nats.Conn
	store *meta.Store
	cfg   Config
	// teams validates each team's plugins in a runtime of its own, so a
	// team's compile waits only for its own (plugins.Config.CompileWorkers).
	teams     *plugins.Teams
	maxBudget time.Duration // the plugins' MaxBudget, or its default
	// lanes runs each team's admin requests one at a time, beside other
	// teams'.
	lanes lanes
	// replies drops requests whose reply subject is not an inbox.
	replies subject.ReplyGuard
	metrics *metrics
	// base is Run's context, under which gate jobs run; gates are the
	// jobs running.
	base  context.Context
	gates gateJobs
}

// New makes the admin service.
func New(ctx context.Context, nc *nats.Conn, store *meta.Store, cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Plugins.Logger = cfg.Logger
	if cfg.GateTimeout < 0 || cfg.GateWait < 0 {
		return nil, fmt.Errorf("admin: the gate's timeout and wait must be 0 (the default) or positive, got %s and %s", cfg.GateTimeout, cfg.GateWait)
	}
	cfg.GateTimeout, cfg.GateWait = cmp.Or(cfg.GateTimeout, DefaultGateTimeout), cmp.Or(cfg.GateWait, DefaultGateWait)
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Service{ready: make(chan struct{}), nc: nc, store: store, cfg: cfg, teams: plugins.NewTeams(cfg.Plugins), maxBudget: cmp.Or(cfg.Plugins.MaxBudget, plugins.DefaultMaxBudget),
		lanes: lanes{waiting: teamAdminWaiting}, replies: subject.ReplyGuard{Service: "admin", Logger: cfg.Logger}, metrics: m}, nil
}

// Request is the body of an admin request; each operation reads its part.
type Request struct {
	Name      string       `json:"name,omitempty"`
	Percent   int          `json:"percent,omitempty"`
	StickyKey string       `json:"sticky_key,omitempty"`
	Kind      api.StepKind `json:"kind,omitempty"`
	Digest    string       `json:"digest,omitempty"`
	// Upload names the staged upload a register request turns into a
	// version (see plugin.upload).
	Upload string `json:"upload,omitempty"`
	// Samples are the team's requests a version must handle before it is
	// valid (see validate).
	Samples []api.SearchRequest `json:"samples,omitempty"`
	Step    api.StepSpec        `json:"step"`
	Spec    *api.PipelineSpec   `json:"spec,omitempty"`
	// Force, with a Reason, puts a version live (activate, promote)
	// although the index's relevance gate refuses it, and records a
	// plugin event saying so.
	Force  bool   `json:"force,omitempty"`
	Reason string `json:"reason,omitempty"`
	// NDJSON is a judgement list (judgements.push; Name names it).
	NDJSON string `json:"ndjson,omitempty"`
	// Version picks a judgement list's version (judgements.show; 0: the
	// latest).
	Version int `json:"version,omitempty"`
	// Gate sets the index's relevance gate, Clear removes it
	// (judgements.gate; neither: show it).
	Gate  *api.Gate `json:"gate,omitempty"`
	Clear bool      `json:"clear,omitempty"`
	// Eval asks for an evaluation (judgements.eval).
	Eval *api.EvalRequest `json:"eval,omitempty"`
	// Events are user events to store (events.put).
	Events []api.UserEvent `json:"events,omitempty"`
	// FromEvents asks for a judgement list built from the index's user
	// events (judgements.from-events).
	FromEvents *api.FromEventsRequest `json:"from_events,omitempty"`
	// Interleave makes a canary an interleaving experiment (rankers).
	Interleave *api.InterleaveSpec `json:"interleave,omitempty"`
	// Logs filters plugin.logs.
	Logs api.PluginLogsRequest `json:"logs,omitzero"`
	// Limit keeps the last Limit records of documents.rejected (0: every
	// one kept).
	Limit int `json:"limit,omitempty"`
}

// Operations of the admin API.
var operations = []string{"plugin.upload", "plugin.register", "plugin.ls", "plugin.activate", "plugin.rm", "plugin.rollback", "plugin.canary", "plugin.promote", "plugin.shadow", "shadow.stats", "plugin.events", "pipeline.show", "pipeline.set",
	"pipeline.history", "index.show", "queries.report",
	"judgements.push", "judgements.ls", "judgements.show", "judgements.rm", "judgements.gate", "judgements.eval",
	"events.put", "judgements.from-events", "canary.stats", "plugin.logs", "documents.rejected", "documents.count", "documents.applied"}

// readOps are the operations that only ask the shards, each bounded by
// shardAskTimeout: they run in a lane of their own per team.
var readOps = map[string]bool{"documents.count": true, "documents.applied": true}

// readyFlushTimeout bounds the wait for the server to confirm the
// service's subscriptions before it says it is ready.
const readyFlushTimeout = 10 * time.Second

// Ready is closed once the service answers every operation.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Run serves the admin API until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	defer s.teams.Close(context.Background())
	// Gate jobs end with ctx and record why; the requests that start
	// them are done first.
	defer s.gates.wg.Wait()
	defer s.lanes.wg.Wait() // requests under way answer before the runtimes close
	s.base = ctx
	// Requests are answered from their teams' lanes, after their handler
	// has returned: internal/service counts each from its arrival to its
	// answer, which micro cannot (`nats micro stats quarry-admin`).
	endpoints := make([]*service.Endpoint, len(operations))
	for i, op := range operations {
		ep := &service.Endpoint{Name: strings.ReplaceAll(op, ".", "-"), Subject: subject.AdminPrefix + ".*." + op}
		ep.Handler = func(m *nats.Msg) { s.handle(ctx, op, ep, m) }
		endpoints[i] = ep
	}
	svc, err := service.Start(s.nc, service.Config{Name: subject.AdminService, Version: "0.1.0",
		Description: "Quarry admin API: plugins and pipelines, per index", Logger: s.cfg.Logger}, endpoints...)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer svc.Stop()
	// Ready once the server has the subscriptions: a client on another
	// connection that asks at once finds a responder.
	if err := s.nc.FlushTimeout(readyFlushTimeout); err != nil {
		return fmt.Errorf("admin: subscribe: %w", err)
	}
	close(s.ready)
	<-ctx.Done()
	return nil
}

func (s *Service) handle(ctx context.Context, op string, ep *service.Endpoint, req *nats.Msg) {
	a := s.answerTo(ep, req)
	if !s.replies.Allow(req.Subject, req.Reply) {
		ep.Done(a.arrived, nil)
		return
	}
	index := strings.TrimSuffix(strings.TrimPrefix(req.Subject, subject.AdminPrefix+"."), "."+op)
	if op == "plugin.upload" { // raw bytes, not JSON
		cctx, cancel := context.WithTimeout(ctx, RequestTimeout)
		defer cancel()
		s.handleUpload(cctx, index, req, a)
		return
	}
	var r Request
	if data := bytes.TrimSpace(req.Data); len(data) > 0 && string(data) != "null" { // no body: an empty request
		if err := api.DecodeStrict("admin request", data, &r); err != nil {
			a.fail(err)
			return
		}
	}
	// The request runs in its team's lane, not in the endpoint's
	// subscription: one team's slow validation or gate does not hold
	// another team's requests.
	cctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	team := ""
	if def, err := s.store.Index(cctx, index); err == nil {
		team = def.TeamOf()
		if !s.replies.AllowTeam(req.Subject, req.Reply, team) {
			cancel()
			ep.Done(a.arrived, nil)
			return
		}
	}
	// A quick read of the shards (a put's --wait polls one) does not
	// wait behind the team's plugin pushes and gates: its own lane, as
	// bounded.
	err := s.lanes.run(cctx, team, readOps[op], func(ctx context.Context) {
		defer cancel()
		out, err := s.Do(ctx, index, op, &r)
		if err != nil {
			a.fail(err)
			return
		}
		a.json(out)
	}, func(err error) {
		cancel()
		a.fail(err)
	})
	if err != nil {
		cancel()
		a.fail(err)
	}
}

// answer is where a request's answer goes: it is answered later, from
// its team's lane, on the connection (with micro's error headers), and
// counted then in its endpoint's figures.
type answer struct {
	s              *Service
	ep             *service.Endpoint
	arrived        time.Time
	subject, reply string
	requestID      string
}

func (s *Service) answerTo(ep *service.Endpoint, req *nats.Msg) answer {
	return answer{s: s, ep: ep, arrived: time.Now(), subject: req.Subject, reply: req.Reply, requestID: req.Header.Get(requestid.Header)}
}

// json answers v as JSON.
func (a answer) json(v any) {
	body, err := json.Marshal(v)
	if err != nil {
		a.fail(fmt.Errorf("encode the answer: %w", err))
		return
	}
	a.publish(&nats.Msg{Subject: a.reply, Data: body})
	a.ep.Done(a.arrived, nil)
}

// fail answers an error. An *api.Error says what the caller can act on;
// any other is internal, its detail (a Go error's text, a library's
// words) logged under a request id and the caller told "internal error
// (request id …)".
func (a answer) fail(err error) {
	var e *api.Error
	if !errors.As(err, &e) {
		id := a.requestID
		if !requestid.Valid(id) {
			id = requestid.New()
		}
		a.s.cfg.Logger.Error("internal error", "request_id", id, "subject", a.subject, "err", err)
		e = api.Errorf(api.CodeInternal, "internal error (request id %s)", id)
	}
	a.publish(wire.ErrorReply(a.reply, e))
	a.ep.Done(a.arrived, e)
}

func (a answer) publish(msg *nats.Msg) {
	if err := a.s.nc.PublishMsg(msg); err != nil {
		a.s.cfg.Logger.Warn("admin answer failed", "subject", a.subject, "err", err)
	}
}

// Do runs one admin operation on an index.
func (s *Service) Do(ctx context.Context, index, op string, r *Request) (any, error) {
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	switch op {
	case "plugin.register":
		return s.registerUpload(ctx, def, r)
	case "plugin.ls":
		return s.list(ctx, index)
	case "plugin.activate":
		return s.activate(ctx, index, r)
	case "plugin.rm":
		return s.remove(ctx, index, r.Name)
	case "plugin.rollback":
		return s.rollback(ctx, index)
	case "plugin.canary":
		return s.canary(ctx, index, r)
	case "plugin.promote":
		return s.promote(ctx, index, r)
	case "plugin.shadow":
		return s.shadow(ctx, index, r)
	case "shadow.stats":
		return s.shadowStats(ctx, index, r.Name)
	case "plugin.events":
		return s.events(ctx, index)
	case "pipeline.show":
		spec, err := s.store.Pipeline(ctx, index)
		return spec, err
	case "pipeline.set":
		return s.setPipeline(ctx, index, r)
	case "pipeline.history":
		return s.history(ctx, index)
	case "index.show":
		return s.indexInfo(ctx, index)
	case "documents.count":
		return s.countDocuments(ctx, def)
	case "documents.applied":
		return s.appliedSequences(ctx, def)
	case "queries.report":
		return s.queryReport(ctx, index)
	case "judgements.push":
		return s.pushJudgements(ctx, def, r)
	case "judgements.ls":
		return s.store.JudgementSets(ctx, index)
	case "judgements.show":
		return s.showJudgements(ctx, index, r)
	case "judgements.rm":
		return s.removeJudgements(ctx, index, r.Name)
	case "judgements.gate":
		return s.gate(ctx, index, r)
	case "judgements.eval":
		return s.evaluate(ctx, index, r.Eval)
	case "events.put":
		return s.putEvents(ctx, def, r.Events)
	case "judgements.from-events":
		return s.fromEvents(ctx, index, r.FromEvents)
	case "canary.stats":
		return s.canaryStats(ctx, index, r.Name)
	case "plugin.logs":
		return s.pluginLogs(ctx, index, r.Name, r.Logs)
	case "documents.rejected":
		if r.Limit < 0 {
			return nil, api.BadRequest("limit must be 0 (every record kept) or more, got %d", r.Limit)
		}
		return s.store.RejectedDocuments(ctx, index, r.Limit)
	}
	return nil, api.BadRequest("unknown admin operation %q", op)
}

func validName(name string) error {
	if err := subject.ValidIndexName(name); err != nil {
		return api.BadRequest("plugin name %q: use 1-64 of a-z, 0-9, '-' and '_'", name)
	}
	return nil
}

// register validates an uploaded binary and records the version.
func (s *Service) register(ctx context.Context, def api.IndexDefinition, r *Request) (*api.PluginVersion, error) {
	index := def.Name
	if err := validName(r.Name); err != nil {
		return nil, err
	}
	if err := checkBudgets(r.Step, s.maxBudget); err != nil {
		return nil, err
	}
	if err := r.Kind.Check(); err != nil {
		return nil, err
	}
	if len(r.Step.Config) > 0 && !json.Valid(r.Step.Config) {
		return nil, api.BadRequest("config is not valid JSON")
	}
	if err := r.Step.Policy.Check(); err != nil {
		return nil, err
	}
	if len(r.Samples) > api.MaxValidationSamples {
		return nil, api.BadRequest("%d sample requests, over the limit of %d", len(r.Samples), api.MaxValidationSamples)
	}
	wasm, err := s.uploaded(ctx, index, r)
	if err != nil {
		return nil, err
	}
	v := &api.PluginVersion{Index: index, Name: r.Name, Kind: r.Kind, Digest: r.Digest, Size: int64(len(wasm)), Pushed: time.Now().UTC()}
	v.Step = r.Step
	v.Step.Plugin, v.Step.Digest = r.Name, r.Digest
	if err := s.validate(ctx, def.TeamOf(), v, wasm, r.Samples); err != nil {
		// The refusal is recorded (plugin ls says why); the bytes are not
		// kept.
		v.Error = err.Error()
	} else {
		v.Valid = true
		if r.Upload != "" {
			if _, err := s.store.PutPlugin(ctx, wasm); err != nil {
				return nil, err
			}
		}
	}
	if err := s.store.PutPluginVersion(ctx, v); err != nil {
		return nil, err
	}
	if !v.Valid {
		return v, api.BadRequest("plugin %s %s refused: %s", r.Name, api.ShortDigest(r.Digest), v.Error)
	}
	return v, nil
}

// list returns an index's pushed versions, newest first, and its pipeline.
func (s *Service) list(ctx context.Context, index string) (map[string]any, error) {
	versions, err := meta.ListJSON[api.PluginVersion](ctx, s.store.PluginVersions, index)
	if err != nil {
		return nil, err
	}
	if versions == nil {
		versions = []api.PluginVersion{} // [] to a client, never null
	}
	slices.SortFunc(versions, func(a, b api.PluginVersion) int { return b.Pushed.Compare(a.Pushed) })
	spec, err := s.store.Pipeline(ctx, index)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"versions": versions, "pipeline": spec}
	if p := s.gateProgress(index); p != nil {
		out["gate"] = p
	}
	return out, nil
}

// update changes an index's pipeline with compare-and-set, as a new
// revision whose Change is change. A fail-open step the automatic
// fallback took out stays out (TakenOut is kept) unless change puts a
// version of it live again.
func (s *Service) update(ctx context.Context, index, change string, fn func(*api.PipelineSpec) error) (*api.PipelineSpec, error) {
	return s.store.ChangePipeline(ctx, index, change, fn)
}

// activate puts a validated version live: its step replaces the plugin's
// step, or is appended to its kind's steps. The index's relevance gate,
// if it has one, must pass first (or r.Force): see goLive.
func (s *Service) activate(ctx context.Context, index string, r *Request) (*api.PipelineSpec, error) {
	name := r.Name
	if err := validName(name); err != nil {
		return nil, err
	}
	v, err := s.store.ValidPluginVersion(ctx, index, name, r.Digest)
	if err != nil {
		return nil, err
	}
	if err := checkForce(r.Force, r.Reason); err != nil {
		return nil, err
	}
	return s.goLive(ctx, s.versionJob(index, v, fmt.Sprintf("plugin activate %s %s", name, api.ShortDigest(v.Digest)), r, func(spec *api.PipelineSpec) error {
		steps := spec.Steps(v.Kind)
		for i := range *steps {
			if (*steps)[i].Plugin == name {
				(*steps)[i] = v.Step
				return nil
			}
		}
		*steps = append(*steps, v.Step)
		return nil
	}))
}

// remove takes a plugin out of the pipeline.
func (s *Service) remove(ctx context.Context, index, name string) (*api.PipelineSpec, error) {
	return s.update(ctx, index, "plugin rm "+name, func(spec *api.PipelineSpec) error {
		before := len(spec.Rewriters) + len(spec.Rankers)
		spec.Rewriters = slices.DeleteFunc(spec.Rewriters, func(st api.StepSpec) bool { return st.Plugin == name })
		spec.Rankers = slices.DeleteFunc(spec.Rankers, func(st api.StepSpec) bool { return st.Plugin == name })
		if len(spec.Rewriters)+len(spec.Rankers) == before {
			return api.NotFound("plugin %s is not in the pipeline of %q", name, index)
		}
		return nil
	})
}

// rollback restores the pipeline before the current one.
func (s *Service) rollback(ctx context.Context, index string) (*api.PipelineSpec, error) {
	hist, err := s.store.PipelineHistory(ctx, index)
	if err != nil {
		return nil, err
	}
	if len(hist) < 2 {
		return nil, api.BadRequest("index %q has no earlier pipeline to roll back to", index)
	}
	// The pipeline before the live one; after a rollback, the one before
	// the pipeline it restored.
	cur, at := hist[len(hist)-1], len(hist)-1
	if cur.RestoredFrom != 0 {
		at = slices.IndexFunc(hist, func(p *api.PipelineSpec) bool { return p.Revision == cur.RestoredFrom })
		if at < 0 {
			return nil, api.BadRequest("index %q: the pipelines before revision %d are no longer kept (history keeps 64)", index, cur.RestoredFrom)
		}
	}
	if at == 0 {
		return nil, api.BadRequest("index %q has no pipeline earlier than revision %d to roll back to", index, hist[at].Revision)
	}
	prev := hist[at-1]
	return s.update(ctx, index, fmt.Sprintf("rollback to revision %d", prev.Revision), func(spec *api.PipelineSpec) error {
		if spec.Revision != cur.Revision {
			return api.Errorf(api.CodeConflict, "the pipeline of %q changed during the rollback; try again", index)
		}
		spec.Rewriters, spec.Rankers, spec.RestoredFrom = prev.Rewriters, prev.Rankers, prev.Revision
		return nil
	})
}

// setPipeline replaces the whole pipeline; every step must name a version
// that was pushed to this index and passed validation, with its kind,
// and the index's relevance gate, if it has one, must pass (or r.Force):
// see goLive.
func (s *Service) setPipeline(ctx context.Context, index string, r *Request) (*api.PipelineSpec, error) {
	spec := r.Spec
	if spec == nil {
		return nil, api.BadRequest("pipeline.set needs a spec")
	}
	if err := s.checkSpec(ctx, index, spec); err != nil {
		return nil, err
	}
	if err := checkForce(r.Force, r.Reason); err != nil {
		return nil, err
	}
	change := spec.Change
	if change == "" {
		change = "pipeline set"
	}
	return s.goLive(ctx, s.pipelineJob(index, spec, change, r, func(cur *api.PipelineSpec) error {
		cur.Rewriters, cur.Rankers, cur.Source = spec.Rewriters, spec.Rankers, spec.Source
		return nil
	}))
}

// checkSpec checks that every step of a pipeline names a version pushed
// to the index that passed validation, with its kind, a valid config
// and budgets.
func (s *Service) checkSpec(ctx context.Context, index string, spec *api.PipelineSpec) error {
	check := func(kind api.StepKind, steps []api.StepSpec) error {
		for i, st := range steps {
			v, err := s.store.ValidPluginVersion(ctx, index, st.Plugin, st.Digest)
			if err != nil {
				return api.Errorf(api.CodeOf(err), "%s %d: %v", kind, i, err)
			}
			if v.Kind != kind {
				return api.BadRequest("%s %d: %s is a %s", kind, i, st.Plugin, v.Kind)
			}
			if len(st.Config) > 0 && !json.Valid(st.Config) {
				return api.BadRequest("%s %d: config is not valid JSON", kind, i)
			}
			if err := checkBudgets(st, s.maxBudget); err != nil {
				return api.BadRequest("%s %d: %v", kind, i, err)
			}
		}
		return nil
	}
	if err := check(api.Rewriter, spec.Rewriters); err != nil {
		return err
	}
	return check(api.Ranker, spec.Rankers)
}

// checkBudgets checks a step's time budgets: budget_ms, the hard limit of
// one call, must not be above the operator's maximum (max, the brokers'
// --plugin-max-budget); latency_budget_ms, the call time the automatic
// fallback holds the step to, must be >= 0 and, when budget_ms is set
// too, not above it.
func checkBudgets(st api.StepSpec, max time.Duration) error {
	switch {
	case st.BudgetMS < 0:
		return api.BadRequest("budget_ms must be >= 0, got %d", st.BudgetMS)
	case int64(st.BudgetMS) > max.Milliseconds():
		return api.BadRequest("budget_ms %d is over the maximum of %d ms this platform allows a plugin call (quarry serve --plugin-max-budget)", st.BudgetMS, max.Milliseconds())
	case st.LatencyBudgetMS < 0:
		return api.BadRequest("latency_budget_ms must be >= 0, got %d", st.LatencyBudgetMS)
	case st.BudgetMS > 0 && st.LatencyBudgetMS > st.BudgetMS:
		return api.BadRequest("latency_budget_ms (%d) must not be above budget_ms (%d): a call over budget_ms is stopped", st.LatencyBudgetMS, st.BudgetMS)
	}
	return nil
}

// canary sends a share of queries to a candidate version (percent 0 ends
// the canary).
func (s *Service) canary(ctx context.Context, index string, r *Request) (*api.PipelineSpec, error) {
	if err := s.checkInterleave(ctx, index, r); err != nil {
		return nil, err
	}
	op := "plugin canary"
	if r.Interleave != nil {
		op = "plugin canary --interleave"
	}
	spec, err := s.candidate(ctx, index, op, r, func(st, cand *api.StepSpec) {
		if cand == nil {
			st.Canary = nil
			return
		}
		st.Canary = &api.CanarySpec{Step: *cand, Percent: r.Percent, StickyKey: r.StickyKey, Interleave: r.Interleave}
	})
	if err == nil && r.Interleave != nil && r.Percent > 0 {
		err = s.startTally(ctx, index, spec, r.Name)
	}
	return spec, err
}

// candidate puts a validated version of a live plugin beside its step
// (set with the candidate's step), or with percent 0 takes it away (set
// with nil): the shared part of canary and shadow.
func (s *Service) candidate(ctx context.Context, index, op string, r *Request, set func(st, cand *api.StepSpec)) (*api.PipelineSpec, error) {
	if r.Percent < 0 || r.Percent > 100 {
		return nil, api.BadRequest("percent must be between 0 and 100, got %d", r.Percent)
	}
	var cand *api.PluginVersion
	if r.Percent > 0 {
		var err error
		if cand, err = s.store.ValidPluginVersion(ctx, index, r.Name, r.Digest); err != nil {
			return nil, err
		}
	}
	what := fmt.Sprintf("%s %s ended", op, r.Name)
	if cand != nil {
		what = fmt.Sprintf("%s %s %s %d%%", op, r.Name, api.ShortDigest(cand.Digest), r.Percent)
	}
	return s.update(ctx, index, what, func(spec *api.PipelineSpec) error {
		st, kind := spec.Step(r.Name)
		if st == nil {
			return api.NotFound("plugin %s is not in the pipeline of %q: %s compares a version with the live one, so activate a first version (quarry plugin activate %s %s DIGEST), then push the next and %s it", r.Name, index, op, index, r.Name, op)
		}
		if cand == nil {
			set(st, nil)
			return nil
		}
		if cand.Kind != kind {
			return api.BadRequest("the candidate is a %s, the live %s a %s", cand.Kind, r.Name, kind)
		}
		if strings.HasPrefix(op, "plugin canary") && sameStep(cand.Step, *st) {
			// A shadow of the live version itself is an A/A check of
			// the comparison; a canary of it changes nothing.
			return api.BadRequest("%s is the live version of %s, with the same settings: a canary sends queries to another version (push one; quarry plugin shadow compares a version with itself)", api.ShortDigest(cand.Digest), r.Name)
		}
		set(st, &cand.Step)
		return nil
	})
}

// promote makes a plugin's canary its live version. The index's
// relevance gate, if it has one, must pass first (or r.Force: see
// goLive); the promotion then goes through only if the canary is still
// the version the gate ran on.
func (s *Service) promote(ctx context.Context, index string, r *Request) (*api.PipelineSpec, error) {
	name := r.Name
	spec, err := s.store.Pipeline(ctx, index)
	if err != nil {
		return nil, err
	}
	st, _ := spec.Step(name)
	if st == nil || st.Canary == nil {
		return nil, api.BadRequest("plugin %s has no canary on index %q", name, index)
	}
	digest := st.Canary.Step.Digest
	v, err := s.store.ValidPluginVersion(ctx, index, name, digest)
	if err != nil {
		return nil, err
	}
	if err := checkForce(r.Force, r.Reason); err != nil {
		return nil, err
	}
	return s.goLive(ctx, s.versionJob(index, v, "plugin promote "+name, r, func(spec *api.PipelineSpec) error {
		st, _ := spec.Step(name)
		if st == nil || st.Canary == nil {
			return api.BadRequest("plugin %s has no canary on index %q", name, index)
		}
		if st.Canary.Step.Digest != digest {
			return api.Errorf(api.CodeConflict, "the canary of %s changed during the promotion; try again", name)
		}
		*st = st.Canary.Step
		return nil
	}))
}

// shadow runs a candidate version of a live plugin (ranker or rewriter)
// on percent of the queries, for comparison only (percent 0 ends it). A
// rewriter's shadow makes brokers run the rest of a sampled query's search
// again for the candidate's request: real extra load, bounded by the
// brokers' shadow concurrency.
func (s *Service) shadow(ctx context.Context, index string, r *Request) (*api.PipelineSpec, error) {
	return s.candidate(ctx, index, "plugin shadow", r, func(st, cand *api.StepSpec) {
		if cand == nil {
			st.Shadow = nil
			return
		}
		st.Shadow = &api.ShadowSpec{Step: *cand, Percent: r.Percent}
	})
}

// shadowStats sums every broker's tallies for a plugin's shadow.
func (s *Service) shadowStats(ctx context.Context, index, name string) (*api.ShadowStats, error) {
	stats := &api.ShadowStats{Index: index, Plugin: name}
	tallies, err := meta.ListJSON[api.ShadowTally](ctx, s.store.Shadow, index+"."+name)
	if err != nil {
		return nil, err
	}
	var sum api.ShadowTally
	for _, t := range tallies {
		sum.Queries += t.Queries
		sum.OverlapSum += t.OverlapSum
		sum.RhoSum += t.RhoSum
		sum.LiveNS += t.LiveNS
		sum.ShadowNS += t.ShadowNS
		sum.Calls += t.Calls
		sum.LiveErrors += t.LiveErrors
		sum.ShadowErrors += t.ShadowErrors
	}
	stats.Queries, stats.LiveErrors, stats.ShadowErrors = sum.Queries, sum.LiveErrors, sum.ShadowErrors
	if sum.Queries > 0 {
		stats.OverlapAt10 = sum.OverlapSum / float64(sum.Queries)
		stats.RankCorrelation = sum.RhoSum / float64(sum.Queries)
	}
	if sum.Calls > 0 {
		stats.LiveMS = float64(sum.LiveNS) / 1e6 / float64(sum.Calls)
		stats.ShadowMS = float64(sum.ShadowNS) / 1e6 / float64(sum.Calls)
	}
	return stats, nil
}

// events lists the index's plugin events (automatic fallbacks), oldest
// first.
func (s *Service) events(ctx context.Context, index string) ([]api.PluginEvent, error) {
	out, err := meta.ListJSON[api.PluginEvent](ctx, s.store.Events, index)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []api.PluginEvent{} // JSON [] rather than null
	}
	slices.SortFunc(out, func(a, b api.PluginEvent) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// sameStep reports whether two steps run the same binary with the same
// settings (their canaries, shadows and fallback state aside): a version
// re-pushed with another config is another candidate.
func sameStep(a, b api.StepSpec) bool {
	a.Canary, a.Shadow, a.TakenOut = nil, nil, nil
	b.Canary, b.Shadow, b.TakenOut = nil, nil, nil
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
