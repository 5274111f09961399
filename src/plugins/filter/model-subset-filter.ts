/**
 * Eligibility filter: keeps endpoints that serve the request's model and, when Envoy sent a
 * subset hint (`envoy.lb.subset_hint`), are named in it. An empty subset leaves nothing, which
 * the runner turns into NO_ENDPOINT (503 at the edge), as the endpoint-picker protocol asks.
 */
import { EndpointRegistry } from '../../endpoints/registry.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, Filter } from '../../framework/types.js';
import { section } from '../../util/schema.js';

export const MODEL_SUBSET_FILTER = 'model-subset-filter';

export class ModelSubsetFilter implements Filter {
  constructor(
    readonly name: string,
    /** False when no endpoint restricts models: the model check can be skipped. */
    private readonly modelRestrictions: boolean,
  ) {}

  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    const { model, subset } = state.request;
    const checkModel = this.modelRestrictions && model !== '';
    if (subset === undefined && !checkModel) return candidates;
    const allowed = subset !== undefined ? new Set(subset) : undefined;
    return candidates.filter(
      (c) => (allowed === undefined || allowed.has(c.endpoint.id)) && (!checkModel || EndpointRegistry.servesModel(c.endpoint, model)),
    );
  }
}

export const modelSubsetFilter = definePlugin({
  type: MODEL_SUBSET_FILTER,
  description: "Keeps endpoints that serve the request's model and, with an Envoy subset hint, are named in it.",
  parameters: section({}),
  create: (name, _p, handle) => new ModelSubsetFilter(name, handle.endpoints.hasModelRestrictions),
});
