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

  /** enrichAllInPlace's value per slot position, the endpoint it is for, and each id's position. */
  private kept = new Float64Array(0);
  private keptFor: (Endpoint | undefined)[] = [];
  private readonly position = new Map<string, number>();

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
    this.position.clear();
    this.keptFor.fill(undefined);
  }

  enrich(endpoint: Endpoint, base: LoadSnapshot): LoadSnapshot {
    return { ...base, pendingTokens: this.model.pendingTokens(endpoint.id) };
  }

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot): void {
    snap.pendingTokens = this.model.pendingTokens(endpoint.id);
  }

  /**
   * enrichInPlace over every slot from values kept per slot position: only the endpoints the
   * model reports changed since the last call are looked up again (a request changes one or
   * two; a lookup by id for each of 1,024 endpoints on every decision was a tenth of it), and
   * everything after a `retain` or when a slot holds another endpoint than last time.
   */
  enrichAllInPlace(slots: readonly LoadSlot[]): void {
    const model = this.model;
    const changes = model.consumeChanges();
    const n = slots.length;
    if (this.kept.length !== n) {
      this.kept = new Float64Array(n);
      this.keptFor = new Array<Endpoint | undefined>(n).fill(undefined);
    }
    const kept = this.kept;
    const keptFor = this.keptFor;
    if (changes === undefined) keptFor.fill(undefined);
    else {
      for (const id of changes) {
        const k = this.position.get(id);
        if (k !== undefined && keptFor[k]?.id === id) kept[k] = model.pendingTokens(id);
      }
    }
    for (let k = 0; k < n; k++) {
      const { endpoint, load } = slots[k]!;
      if (keptFor[k] !== endpoint) {
        // An endpoint is kept at one position only (its changes refresh that one).
        const was = this.position.get(endpoint.id);
        if (was !== undefined && was !== k && keptFor[was] === endpoint) keptFor[was] = undefined;
        keptFor[k] = endpoint;
        this.position.set(endpoint.id, k);
        kept[k] = model.pendingTokens(endpoint.id);
      }
      load.pendingTokens = kept[k]!;
    }
  }
}
