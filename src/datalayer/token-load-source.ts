/**
 * Token-load source of the data layer: keeps the per-engine pending-token estimate
 * (token-load-model.ts) up to date from the request-lifecycle hooks and publishes it as
 * `LoadSnapshot.pendingTokens` through a registry LoadSource.
 *
 * Predicted hit fraction of a routed request = matched characters (what the prefix plugin
 * believes the chosen engine already holds) ÷ prompt chars. When the edge reports the
 * request's first response byte (RouteTicket.firstByte, the first streamed token) the
 * prefill part leaves the estimate; without it the prefill part stays until the request
 * completes (a conservative overestimate).
 */
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../endpoints/load.js';
import type { LoadSlot, LoadSource } from '../endpoints/registry.js';
import type { CompletedHook, CycleState, EndpointsChangedHook, RoutedHook } from '../framework/types.js';
import type { TokenLoadModel } from './token-load-model.js';

export class TokenLoadSource implements RoutedHook, CompletedHook, EndpointsChangedHook, LoadSource {
  readonly name = 'token-load-model';

  constructor(readonly model: TokenLoadModel) {}

  onRouted(state: CycleState, decision: RouteDecision): void {
    const r = state.request;
    const pd = decision.disagg;
    const prefill = pd?.prefill;
    // A split request's prompt is computed on its prefill engine, with that engine's hit.
    const hit =
      prefill !== undefined
        ? r.promptTokens > 0
          ? (pd!.prefillCachedTokens ?? 0) / r.promptTokens
          : 0
        : r.promptChars > 0
          ? (decision.matchedChars ?? 0) / r.promptChars
          : 0;
    this.model.onRouted({
      requestId: r.requestId,
      endpointId: decision.endpoint.id,
      model: r.model,
      promptTokens: r.promptTokens,
      predictedHitFraction: hit,
      maxTokens: r.maxTokens,
      ...(prefill !== undefined ? { prefillEndpointId: prefill.id } : {}),
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

  enrichAllInPlace(slots: readonly LoadSlot[]): void {
    const model = this.model;
    for (let k = 0; k < slots.length; k++) {
      const s = slots[k]!;
      s.load.pendingTokens = model.pendingTokens(s.endpoint.id);
    }
  }
}
