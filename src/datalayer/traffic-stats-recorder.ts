/**
 * Feeds the sliding-window traffic statistics (traffic-stats.ts) from every
 * decision and outcome: the request's prefix-group key, where it went, how many blocks the
 * router predicted cached there, and what the engine then reported in `usage`.
 */
import type { RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import { prefixKeyOf } from '../prefix-cache/prefix-key.js';
import type { CompletedHook, CycleState, RoutedHook } from '../framework/types.js';
import type { TrafficStats } from './traffic-stats.js';

export class TrafficStatsRecorder implements RoutedHook, CompletedHook {
  readonly name = 'traffic-stats';

  constructor(
    readonly stats: TrafficStats,
    private readonly keyChars: number,
    private readonly minKeyChars: number,
  ) {}

  onRouted(state: CycleState, decision: RouteDecision): void {
    const key = prefixKeyOf(state.request.prefix, this.keyChars, this.minKeyChars);
    this.stats.recordDecision(key, decision.endpoint.id, decision.matchedBlocks, decision.totalBlocks);
  }

  onCompleted(_request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    if (outcome.servedBy !== undefined && outcome.servedBy !== decision.endpoint.id) return;
    this.stats.recordOutcome(decision.endpoint.id, outcome.promptTokens, outcome.cachedTokens);
  }
}
