package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/subject"
)

// streamNames are the JetStream streams behind Quarry's resources, the
// documents first: the stream whose replication the deployment is known by.
func streamNames() []string {
	names := []string{subject.DocsStream}
	for _, b := range []string{subject.IndexesBucket, subject.ManifestsBucket, subject.PipelinesBucket, subject.PluginVersionsBucket,
		subject.ShadowBucket, subject.EventsBucket, subject.TeamsBucket, subject.TokensBucket, subject.JudgementsBucket,
		subject.InterleaveBucket, subject.InterleaveTalliesBucket, subject.FieldsBucket, subject.AliasesBucket} {
		names = append(names, "KV_"+b)
	}
	for _, b := range []string{subject.SegmentsBucket, subject.PluginsBucket} {
		names = append(names, "OBJ_"+b)
	}
	return append(names, subject.QueriesStream, subject.UploadsStream, subject.UserEventsStream, subject.PluginLogsStream, subject.RejectedStream)
}

// ReplicasError says that a role or command asked for a replication
// Quarry's existing resources do not have.
type ReplicasError struct {
	Want     int
	Existing map[string]int // stream → its replicas, those that differ
}

func (e *ReplicasError) Error() string {
	byCount := map[int][]string{}
	for _, name := range streamNames() { // the documents' first
		if n, ok := e.Existing[name]; ok {
			byCount[n] = append(byCount[n], name)
		}
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(byCount)) {
		names := byCount[n]
		what := names[0]
		if len(names) > 1 {
			what = fmt.Sprintf("%s and %d more", names[0], len(names)-1)
		}
		parts = append(parts, fmt.Sprintf("at %d (%s)", n, what))
	}
	return fmt.Sprintf("--replicas %d, but this deployment's JetStream streams exist %s: "+
		"replication is decided once for a deployment; start without --replicas to use the deployment's, "+
		"or change it with `quarry init --replicas %d`", e.Want, strings.Join(parts, " and "), e.Want)
}

// replicas is what Open gives each resource.
type replicas struct {
	existing map[string]int // stream → replicas, of the streams that exist
	def      int            // for missing streams (and every stream on rescale)
	rescale  bool
}

func (r *replicas) of(stream string) int {
	if n, ok := r.existing[stream]; ok && !r.rescale {
		return n
	}
	return r.def
}

// Replication returns the replicas of each of Quarry's JetStream streams
// that exists, by stream name.
func Replication(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (map[string]int, error) {
	if log == nil {
		log = slog.Default()
	}
	existing := map[string]int{}
	for _, name := range streamNames() {
		err := untilReady(ctx, log, "stream "+name, func(ctx context.Context) error {
			st, err := js.Stream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			existing[name] = max(1, st.CachedInfo().Config.Replicas)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("look up stream %s: %w", name, err)
		}
	}
	return existing, nil
}

// replication looks up the replication of Quarry's existing resources and
// decides what each gets (Options.Replicas).
func replication(ctx context.Context, js jetstream.JetStream, opts Options) (*replicas, error) {
	existing, err := Replication(ctx, js, opts.Logger)
	if err != nil {
		return nil, err
	}
	r := &replicas{existing: existing, def: opts.Replicas, rescale: opts.Rescale}
	if r.def == 0 {
		r.def = 1
		for _, name := range streamNames() { // the documents' first
			if n, ok := r.existing[name]; ok {
				r.def = n
				break
			}
		}
		return r, nil
	}
	if opts.Rescale {
		return r, nil
	}
	differ := map[string]int{}
	for name, n := range r.existing {
		if n != r.def {
			differ[name] = n
		}
	}
	if len(differ) > 0 {
		return nil, &ReplicasError{Want: r.def, Existing: differ}
	}
	return r, nil
}
