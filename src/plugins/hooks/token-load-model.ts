/**
 * Token-load plugin: keeps the per-engine pending-token estimate (src/endpoints/load-model.ts)
 * up to date from the scheduler's routed/completed hooks and publishes it as
 * `LoadSnapshot.pendingTokens` through a registry LoadSource.
 *
 * Predicted hit fraction of a routed request = matched blocks × blockChars ÷ prompt chars
 * (what the prefix index believes the chosen engine already holds), clamped to [0,1].
 * When the edge reports the request's first response byte (RouteTicket.firstByte, the first
 * streamed token) the prefill part leaves the estimate; without it the prefill part stays
 * until the request completes (a conservative overestimate).
 */
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import type { TokenLoadModel } from '../../endpoints/load-model.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../../endpoints/load.js';
import type { LoadSource } from '../../endpoints/registry.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { CompletedHook, CycleState, EndpointsChangedHook, RoutedHook } from '../../scheduling/types.js';
import { sharedTokenLoadModel } from '../load-signal-services.js';
import { params } from '../plugin-params.js';

export const TOKEN_LOAD_MODEL_PLUGIN = 'token-load-model';

export class TokenLoadModelPlugin implements RoutedHook, CompletedHook, EndpointsChangedHook, LoadSource {
  constructor(
    readonly name: string,
    readonly model: TokenLoadModel,
    private readonly blockChars: number,
  ) {}

  onRouted(state: CycleState, decision: RouteDecision): void {
    const r = state.request;
    const hit = r.promptChars > 0 ? (decision.matchedBlocks * this.blockChars) / r.promptChars : 0;
    this.model.onRouted({
      requestId: r.requestId,
      endpointId: decision.endpoint.id,
      model: r.model,
      promptTokens: r.promptTokens,
      predictedHitFraction: hit,
      maxTokens: r.maxTokens,
    });
  }

  onCompleted(request: RouteRequest, _decision: RouteDecision, outcome: RequestOutcome): void {
    this.model.onCompleted(request.requestId, request.model, outcome.completionTokens, outcome.aborted);
  }

  onFirstByte(request: RouteRequest): void {
    this.model.onFirstToken(request.requestId);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.model.retain(endpoints.map((e) => e.id));
  }

  enrich(endpoint: Endpoint, base: LoadSnapshot): LoadSnapshot {
    return { ...base, pendingTokens: this.model.pendingTokens(endpoint.id) };
  }

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot): void {
    snap.pendingTokens = this.model.pendingTokens(endpoint.id);
  }
}

export const tokenLoadModelPluginFactory: PluginFactory = (name, p, ctx) => {
  params(name, p).only();
  const plugin = new TokenLoadModelPlugin(name, sharedTokenLoadModel(ctx), ctx.config.cacheAware.blockChars);
  ctx.endpoints.addLoadSource(plugin);
  return plugin;
};
