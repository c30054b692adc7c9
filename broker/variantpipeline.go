package broker

import (
	"context"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/plugins"
)

// maxVariantSteps caps the steps of a variant pipeline.
const maxVariantSteps = 32

// variantPipeline builds a whole candidate pipeline for one request (a
// relevance evaluation's candidate): every step must name a pushed,
// validated version of one of the index's plugins, of the step's kind,
// and runs with the settings that version was pushed with. Its steps'
// failures are not the live steps' (no automatic fallback).
func (b *Broker) variantPipeline(ctx context.Context, l *pipeline.Loader, index string, want *api.PipelineSpec) (*Pipeline, error) {
	if n := len(want.Rewriters) + len(want.Rankers); n > maxVariantSteps {
		return nil, api.BadRequest("variant pipeline: %d steps, over the limit of %d", n, maxVariantSteps)
	}
	spec := &api.PipelineSpec{Index: index}
	// Each version read once a request: a variant may name one version
	// in each of its 32 steps.
	versions := map[[2]string]*api.PluginVersion{}
	for _, k := range []struct {
		kind plugins.Kind
		in   []api.StepSpec
		out  *[]api.StepSpec
	}{{plugins.Rewriter, want.Rewriters, &spec.Rewriters}, {plugins.Ranker, want.Rankers, &spec.Rankers}} {
		for i, st := range k.in {
			key := [2]string{st.Plugin, st.Digest}
			ver := versions[key]
			if ver == nil {
				var err error
				if ver, err = b.store.ValidPluginVersion(ctx, index, st.Plugin, st.Digest); err != nil {
					return nil, api.Errorf(api.CodeOf(err), "variant pipeline: %s %d: %v", k.kind, i, err)
				}
				versions[key] = ver
			}
			if ver.Kind != k.kind {
				return nil, api.BadRequest("variant pipeline: %s %d: %s is a %s", k.kind, i, st.Plugin, ver.Kind)
			}
			step := ver.Step
			step.Canary, step.Shadow, step.TakenOut = nil, nil, nil
			*k.out = append(*k.out, step)
		}
	}
	return l.BuildVariant(ctx, spec)
}
