/**
 * Prefill/decode contenders for the fleet simulator: the real router with the disaggregation
 * graph of examples/router-pd.yaml (decode profile: prefix affinity + queue; prefill profile:
 * prefix affinity + prefill-token load; `disagg-profile-handler` deciding), with the decider's
 * parameters given per contender (`split: always | never | auto` and its thresholds), so a
 * study compares always-split, never-split and decider settings on the same engines.
 */
import type { Contender } from './policy.js';
import { routerContender, type RouterDocument } from './router-policy.js';

/** The disagg-profile-handler's parameters (docs/plugins.md); unset ones keep the plugin's defaults. */
export interface PdHandlerParams {
  readonly split?: 'auto' | 'always' | 'never';
  readonly minUncachedTokens?: number;
  readonly minPromptTokens?: number;
  readonly maxPrefillPendingTokens?: number;
  readonly prefillTokensPerSecond?: number;
}

/** The P/D plugin graph with these handler parameters (a router document without endpoints). */
export function pdRouterDocument(handler: PdHandlerParams): RouterDocument {
  const common = [{ pluginRef: 'model-subset-filter' }, { pluginRef: 'health-filter' }];
  return {
    plugins: [
      { type: 'model-subset-filter' },
      { type: 'health-filter' },
      { type: 'role-filter', name: 'decode-engines', parameters: { roles: ['decode', 'both'] } },
      { type: 'role-filter', name: 'prefill-engines', parameters: { roles: ['prefill'] } },
      { type: 'prefix-cache' },
      { type: 'queue-scorer' },
      { type: 'token-load-scorer' },
      { type: 'max-score-picker' },
      { type: 'disagg-profile-handler', parameters: { ...handler } },
    ],
    schedulingProfiles: [
      {
        name: 'decode',
        plugins: [
          ...common,
          { pluginRef: 'decode-engines' },
          { pluginRef: 'prefix-cache', weight: 2 },
          { pluginRef: 'queue-scorer', weight: 2 },
          { pluginRef: 'max-score-picker' },
        ],
      },
      {
        name: 'prefill',
        plugins: [
          ...common,
          { pluginRef: 'prefill-engines' },
          { pluginRef: 'prefix-cache', weight: 3 },
          { pluginRef: 'token-load-scorer', weight: 2 },
          { pluginRef: 'max-score-picker' },
        ],
      },
    ],
  };
}

/** A P/D contender: the real router running the P/D graph with these handler parameters. */
export function pdContender(label: string, handler: PdHandlerParams): Contender {
  return routerContender(label, { document: pdRouterDocument(handler) }, 'cacheroute disagg-profile-handler');
}
