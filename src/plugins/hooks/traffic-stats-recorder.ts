/**
 * Feeds the sliding-window traffic statistics (src/scheduling/traffic-stats.ts) from every
 * decision and outcome: the request's prefix-group key, where it went, how many blocks the
 * router predicted cached there, and what the engine then reported in `usage`.
 */
import type { RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { TrafficStats } from '../../scheduling/traffic-stats.js';
import type { CompletedHook, CycleState, RoutedHook } from '../../scheduling/types.js';
import { prefixGroupKeyChars, sharedTrafficStats } from '../load-signal-services.js';
import { params } from '../plugin-params.js';
import { prefixKeyOf } from '../shared/prefix-key.js';

export const TRAFFIC_STATS_PLUGIN = 'traffic-stats';

export class TrafficStatsRecorder implements RoutedHook, CompletedHook {
  constructor(
    readonly name: string,
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

export const trafficStatsPluginFactory: PluginFactory = (name, p, ctx) => {
  params(name, p).only();
  const k = prefixGroupKeyChars(ctx.config);
  return new TrafficStatsRecorder(name, sharedTrafficStats(ctx), k.keyChars, k.minKeyChars);
};
