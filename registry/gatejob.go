package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/internal/requestid"
)

// Defaults of the relevance gate's jobs (Config.GateTimeout,
// Config.GateWait).
const (
	// DefaultGateTimeout bounds one gate: a judgement list of the most
	// queries (api.MaxJudgedQueries) with searches of a second each
	// takes under three hours, a list of a thousand of 50 ms under two
	// minutes.
	DefaultGateTimeout = 30 * time.Minute
	// DefaultGateWait is how long the change's request waits for its
	// gate before it answers gate_running.
	DefaultGateWait = 20 * time.Second
)

// recordTimeout bounds what a gate job writes once its gate has ended
// (the result with the version, the change, its events): a gate cut off
// by its time still records why.
const recordTimeout = 10 * time.Second

// gateJobs are the relevance gates running on this admin service, at
// most one per index.
type gateJobs struct {
	wg sync.WaitGroup // Run waits for them

	mu      sync.Mutex
	byIndex map[string]*gateJob
}

// gateJob is one change about to go live (an activation, a promotion, a
// whole pipeline) and the index's relevance gate on it: what lives for
// one gate lives here, its stages as methods. The job runs in a
// goroutine of the Service, under Run's context and Config.GateTimeout,
// not its request's: the request waits for it up to Config.GateWait and
// then answers gate_running, and the job applies the change by itself
// if it passes, recording what happened as a plugin event.
type gateJob struct {
	s     *Service
	index string
	// plugin and digest name the version checked; plugin is "pipeline"
	// (digest empty) for a whole pipeline.
	plugin, digest string
	// what names the candidate in a refusal ("plugin boost 1a2b3c4d5e6f",
	// "the pipeline"), version in plugin events ("1a2b3c4d5e6f", "set").
	what, version string
	// variant is the candidate searched beside the live pipeline.
	variant *api.Variant
	// pv, for a version, is where what the gate found is recorded.
	pv *api.PluginVersion
	// change names the pipeline revision the change makes; apply makes
	// it on the pipeline as it is then (compare-and-set).
	change string
	apply  func(*api.PipelineSpec) error
	force  bool
	reason string

	// Set when the job starts.
	gate    *api.Gate
	started time.Time
	ended   chan struct{} // closed once it ended and left gateJobs

	// Progress, read while it runs.
	done, total atomic.Int64
	set         atomic.Pointer[string]

	mu       sync.Mutex
	finished bool // spec and err are its outcome
	detached bool // its request answered gate_running: the job reports itself
	spec     *api.PipelineSpec
	err      error
}

// versionJob is the gate job of a change that puts version v live.
func (s *Service) versionJob(index string, v *api.PluginVersion, change string, r *Request, apply func(*api.PipelineSpec) error) *gateJob {
	short := api.ShortDigest(v.Digest)
	return &gateJob{s: s, index: index, plugin: v.Name, digest: v.Digest, what: fmt.Sprintf("plugin %s %s", v.Name, short), version: short,
		variant: &api.Variant{Plugin: v.Name, Digest: v.Digest}, pv: v, change: change, apply: apply, force: r.Force, reason: r.Reason}
}

// pipelineJob is the gate job of a whole pipeline about to replace the
// live one.
func (s *Service) pipelineJob(index string, spec *api.PipelineSpec, change string, r *Request, apply func(*api.PipelineSpec) error) *gateJob {
	p := &api.PipelineSpec{Index: index, Rewriters: spec.Rewriters, Rankers: spec.Rankers}
	return &gateJob{s: s, index: index, plugin: "pipeline", what: "the pipeline", version: "set",
		variant: &api.Variant{Pipeline: p}, change: change, apply: apply, force: r.Force, reason: r.Reason}
}

// goLive makes j's change. Without a gate on the index, at once; with
// one, the gate runs as a job and the request waits for it up to
// Config.GateWait (or its own end): the job's outcome if it ended by
// then, else a gate_running error with its progress. Another gated
// change of the index while a job runs is refused (conflict).
func (s *Service) goLive(ctx context.Context, j *gateJob) (*api.PipelineSpec, error) {
	g, err := s.store.Gate(ctx, j.index)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return j.commit(ctx, nil)
	}
	if err := s.startGate(j, g); err != nil {
		return nil, err
	}
	wait := time.NewTimer(s.cfg.GateWait)
	defer wait.Stop()
	select {
	case <-j.ended:
		return j.spec, j.err
	case <-wait.C:
	case <-ctx.Done():
	}
	j.mu.Lock()
	finished := j.finished
	j.detached = !finished
	j.mu.Unlock()
	if finished { // it ended as the wait did: answer as if in time
		<-j.ended
		return j.spec, j.err
	}
	p := j.progress()
	return nil, &api.Error{Code: api.CodeGateRunning, Running: &p,
		Message: fmt.Sprintf("the relevance gate of %q is running on %s: %s; %s goes live by itself if it passes (%s shows the outcome)",
			j.index, j.checks(), howFar(p), j.change, j.showCommand())}
}

// startGate starts j, the gate g on its change, unless a gate runs on
// the index already.
func (s *Service) startGate(j *gateJob, g *api.Gate) error {
	s.gates.mu.Lock()
	defer s.gates.mu.Unlock()
	if r := s.gates.byIndex[j.index]; r != nil {
		return api.Errorf(api.CodeConflict, "a relevance gate is running on %s of %q (%s): %s; wait for it to end (%s shows it) and try again",
			r.checks(), r.index, r.change, howFar(r.progress()), r.showCommand())
	}
	base := s.base
	if base == nil {
		base = context.Background()
	}
	if base.Err() != nil {
		return api.Errorf(api.CodeUnavailable, "the admin service is stopping; try again")
	}
	if s.gates.byIndex == nil {
		s.gates.byIndex = map[string]*gateJob{}
	}
	j.gate, j.started, j.ended = g, time.Now().UTC().Truncate(time.Millisecond), make(chan struct{})
	s.gates.byIndex[j.index] = j
	s.metrics.gateJobs.Inc()
	ctx, cancel := context.WithTimeout(base, s.cfg.GateTimeout)
	s.gates.wg.Go(func() {
		defer cancel()
		spec, res, err := j.run(ctx)
		j.mu.Lock()
		j.spec, j.err, j.finished = spec, err, true
		detached := j.detached
		j.mu.Unlock()
		if detached {
			j.report(ctx, spec, res, err)
		}
		s.gates.mu.Lock()
		delete(s.gates.byIndex, j.index)
		s.gates.mu.Unlock()
		s.metrics.gateJobs.Dec()
		close(j.ended)
	})
	return nil
}

// gateProgress is the progress of the gate running on index, if one
// does.
func (s *Service) gateProgress(index string) *api.GateProgress {
	s.gates.mu.Lock()
	j := s.gates.byIndex[index]
	s.gates.mu.Unlock()
	if j == nil {
		return nil
	}
	p := j.progress()
	return &p
}

// run is the job: the gate on the candidate, what it found recorded
// with the version, and, if it passed (or failed and was forced), the
// change. ctx bounds the gate; the rest gets recordTimeout of its own,
// so that a gate cut off by its time still records why. It returns the
// new pipeline, or the error the change's request answers (gate_failed
// with the figures, timeout, …), and what the gate found.
func (j *gateJob) run(ctx context.Context) (*api.PipelineSpec, *api.GateResult, error) {
	res, err := j.evaluate(ctx)
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if j.pv != nil {
		j.pv.Gate = res
		if err := j.s.store.PutPluginVersion(wctx, j.pv); err != nil {
			return nil, res, err
		}
	}
	if err := j.enforce(ctx, wctx, res); err != nil {
		return nil, res, err
	}
	spec, err := j.commit(wctx, res)
	return spec, res, err
}

// commit makes the change on the pipeline as it is now (compare-and-set),
// the revision carrying what the gate found (nil: no gate).
func (j *gateJob) commit(ctx context.Context, res *api.GateResult) (*api.PipelineSpec, error) {
	return j.s.update(ctx, j.index, j.change, func(spec *api.PipelineSpec) error {
		spec.Gate = res
		return j.apply(spec)
	})
}

// evaluate runs the gate on the candidate against the live pipeline,
// every set in turn, keeping its progress; with force, a failed result
// is marked forced with the reason. A set that cannot be evaluated (a
// search failed, ctx ended) fails, saying why.
func (j *gateJob) evaluate(ctx context.Context) (*api.GateResult, error) {
	g := j.gate
	res := &api.GateResult{Plugin: j.plugin, Digest: j.digest, Time: j.started, Gate: *g, Passed: true}
	sets := make([]*api.JudgementSet, len(g.Sets))
	errs := make([]error, len(g.Sets))
	total := 0
	for i, name := range g.Sets {
		if sets[i], errs[i] = j.s.store.JudgementSet(ctx, j.index, name, 0); errs[i] == nil {
			total += len(sets[i].Queries)
		}
	}
	j.total.Store(int64(total))
	live, cand := j.s.searcher(j.index, nil), j.s.searcher(j.index, j.variant)
	before := 0 // queries of the sets before this one
	for i, name := range g.Sets {
		sr := api.GateSetResult{Set: name}
		err := errs[i]
		if err == nil {
			j.set.Store(&name)
			o := relevance.Options{K: g.K, Confidence: g.Confidence, Progress: func(done, _ int) { j.done.Store(int64(before + done)) }}
			var rep *api.EvalReport
			if rep, err = relevance.Evaluate(ctx, sets[i], o, live, cand); err == nil {
				sr, err = relevance.GateSet(g, rep)
			}
			before += len(sets[i].Queries)
		}
		if err != nil {
			if api.CodeOf(err) == api.CodeInternal && ctx.Err() == nil {
				return nil, fmt.Errorf("gate on set %s: %w", name, err)
			}
			sr.Set, sr.Passed, sr.Error = name, false, err.Error()
		}
		res.Sets = append(res.Sets, sr)
		res.Passed = res.Passed && sr.Passed
	}
	if !res.Passed && j.force {
		res.Forced, res.Reason = true, j.reason
	}
	return res, nil
}

// enforce refuses the change when the gate failed and was not forced:
// with a CodeGateFailed error carrying the figures, or, when ctx ended
// before the gate did, the error saying so. A forced failure is recorded
// as a plugin event (with wctx).
func (j *gateJob) enforce(ctx, wctx context.Context, res *api.GateResult) error {
	if res.Passed {
		return nil
	}
	figures := relevance.Describe(res)
	for _, sr := range res.Sets {
		if sr.Error != "" {
			figures += "; set " + sr.Set + ": " + sr.Error
		}
	}
	if res.Forced {
		j.s.recordEvent(wctx, api.PluginEvent{Index: j.index, Plugin: j.plugin, Version: j.version, Time: res.Time,
			Event: "gate overridden", Reason: res.Reason + "; " + figures})
		return nil
	}
	p := j.progress()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return api.Errorf(api.CodeTimeout, "the relevance gate of %q on %s ran out of its time, %s (quarry serve --gate-timeout), at %d of %d queries: nothing changed",
			j.index, j.checks(), j.s.cfg.GateTimeout, p.Done, p.Total)
	case ctx.Err() != nil:
		return api.Errorf(api.CodeUnavailable, "the admin service stopped during the relevance gate of %q on %s, at %d of %d queries: nothing changed; try again",
			j.index, j.checks(), p.Done, p.Total)
	}
	return &api.Error{Code: api.CodeGateFailed, Gate: res,
		Message: fmt.Sprintf("%s refused by the relevance gate of %q: %s (--force --reason \"...\" overrides)", j.what, j.index, figures)}
}

// report records the outcome of a job whose request answered before it
// ended, as a plugin event: the change live, refused by the gate, or
// stopped (its time ran out, a conflict, an error), with the figures.
func (j *gateJob) report(ctx context.Context, spec *api.PipelineSpec, res *api.GateResult, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	ev := api.PluginEvent{Index: j.index, Plugin: j.plugin, Version: j.version, Time: time.Now().UTC(), Gate: res}
	switch {
	case err == nil:
		ev.Event = api.EventGateLive
		if res != nil && !res.Passed {
			ev.Event = api.EventGateForced
		}
		ev.Reason = fmt.Sprintf("%s, pipeline revision %d", j.change, spec.Revision)
		if res != nil {
			ev.Reason += ": " + relevance.Describe(res)
		}
	default:
		var e *api.Error
		if !errors.As(err, &e) {
			id := requestid.New()
			j.s.cfg.Logger.Error("internal error", "request_id", id, "index", j.index, "gate", j.change, "err", err)
			e = api.Errorf(api.CodeInternal, "internal error (request id %s)", id)
		}
		ev.Event, ev.Code, ev.Reason = api.EventGateStopped, e.Code, e.Message
		if e.Code == api.CodeGateFailed {
			ev.Event = api.EventGateRefused
		}
	}
	j.s.cfg.Logger.Info("relevance gate ended", "index", j.index, "change", j.change, "event", ev.Event, "reason", ev.Reason)
	j.s.recordEvent(ctx, ev)
}

// progress is how far the job got.
func (j *gateJob) progress() api.GateProgress {
	p := api.GateProgress{Index: j.index, Plugin: j.plugin, Digest: j.digest, What: j.change, Started: j.started,
		Deadline: j.started.Add(j.s.cfg.GateTimeout), Done: int(j.done.Load()), Total: int(j.total.Load())}
	if set := j.set.Load(); set != nil {
		p.Set = *set
	}
	return p
}

// checks names what the job checks: "plugin boost sha256:1a2b3c4d5e6f",
// "the pipeline".
func (j *gateJob) checks() string {
	if j.pv == nil {
		return j.what
	}
	return fmt.Sprintf("plugin %s sha256:%s", j.plugin, j.version)
}

// showCommand is the command that shows the job and its outcome.
func (j *gateJob) showCommand() string {
	if j.pv == nil {
		return "quarry plugin ls " + j.index
	}
	return fmt.Sprintf("quarry plugin show %s %s", j.index, j.plugin)
}

// howFar says how far a gate got: "340 of 1000 queries, 12s".
func howFar(p api.GateProgress) string {
	return fmt.Sprintf("%d of %d queries, %s", p.Done, p.Total, time.Since(p.Started).Round(time.Second))
}
