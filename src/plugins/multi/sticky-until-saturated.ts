/**
 * "Sticky until saturated" (llm-d's recommended profile since 2026-08): stay on the engines
 * that hold most of the prompt, choose among them by the least uncached prefill in flight,
 * and let go once that queue is longer than the TTFT penalty one is willing to pay for the
 * cache hit.
 *
 * Rule: the sticky set = candidates holding at least `threshold` of the request's blocks
 * (prefix plugin's evidence); an engine is saturated when its uncached prefill tokens in
 * flight exceed τ = its prefill throughput × `maxTtftPenaltyMs`. τ is derived per engine
 * from the ttft-model plugin's learned prefill rate (tokens per ms), not a constant, so a
 * slow engine lets go sooner. If some sticky engine is not saturated, the one with the
 * least prefill in flight wins; otherwise (cold request, or every holder saturated) the
 * engine with the least prefill in flight plus this request's own uncached prefill there
 * wins. Exact ties are broken by the seeded Rng.
 */
import { getScratch } from '../../framework/cycle-scratch.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../framework/types.js';
import { num, section, str } from '../../util/schema.js';
import { sortRange } from '../../util/sort-range.js';
import { affinityReason } from '../shared/affinity-reason.js';
import { AFFINITY_EVIDENCE } from '../shared/cycle-keys.js';
import { FEATURE, TTFT_MODEL_PLUGIN, ttftModelPlugin, type TtftModelPlugin } from './ttft-model-plugin.js';

export const STICKY_UNTIL_SATURATED = 'sticky-until-saturated-picker';

export interface StickyOptions {
  readonly threshold: number;
  readonly maxTtftPenaltyMs: number;
}

export class StickyUntilSaturatedPicker implements Picker {
  constructor(
    readonly name: string,
    private readonly model: TtftModelPlugin,
    private readonly opts: StickyOptions,
  ) {}

  /** τ of one engine: uncached tokens it prefills within the tolerated penalty. */
  tau(endpointId: string): number {
    return this.model.model.prefillTokensPerMs(endpointId) * this.opts.maxTtftPenaltyMs;
  }

  /** Per-candidate sort keys, reused across decisions (grown as needed). */
  private key = new Float64Array(64);
  private tie = new Float64Array(64);
  private sticky = new Uint8Array(64);

  /**
   * One pass over the flat features (no objects), then an insertion sort of the order over
   * the reused keys: the pick runs on every request, so it allocates only the order.
   */
  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const v = this.model.featureValues(state, candidates);
    const ev = getScratch(state, AFFINITY_EVIDENCE);
    const n = candidates.length;
    if (this.key.length < n) {
      this.key = new Float64Array(2 * n);
      this.tie = new Float64Array(2 * n);
      this.sticky = new Uint8Array(2 * n);
    }
    const key = this.key;
    const tie = this.tie;
    const sticky = this.sticky;
    const total = ev?.totalBlocks ?? 0;
    let anySticky = false;
    let holders = 0;
    for (let i = 0; i < n; i++) {
      const c = candidates[i]!;
      const o = i * FEATURE.stride;
      const ahead = v[o + FEATURE.aheadTokens]!;
      const share = total > 0 ? (ev!.matchedByEndpoint[c.endpoint.index] ?? 0) / total : 0;
      // Sticky engines sort first, by prefill in flight; the rest after them by queue + own prefill.
      sticky[i] = 0;
      if (share >= this.opts.threshold) {
        if (total > 0) holders++;
        if (ahead <= this.tau(c.endpoint.id)) sticky[i] = 1;
      }
      key[i] = sticky[i] === 1 ? ahead : ahead + v[o + FEATURE.uncachedTokens]!;
      if (sticky[i] === 1) anySticky = true;
      tie[i] = state.rng.next();
    }
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i;
    const cmp = (a: number, b: number): number => sticky[b]! - sticky[a]! || key[a]! - key[b]! || tie[a]! - tie[b]!;
    if (n > 32) order.sort(cmp);
    else sortRange(order, 0, n, cmp);
    const chosen = order[0]!;
    if (!anySticky && holders > 0) state.notes.push('sticky: every holder saturated');
    return { order, reason: affinityReason(state, candidates, chosen) ?? 'load' };
  }

  debugState(): unknown {
    return { threshold: this.opts.threshold, maxTtftPenaltyMs: this.opts.maxTtftPenaltyMs };
  }
}

export const stickyUntilSaturatedPicker = definePlugin({
  type: STICKY_UNTIL_SATURATED,
  description:
    'Sticky until saturated: among engines holding at least threshold of the prompt, the least uncached prefill in flight, until that exceeds τ = the engine’s learned prefill throughput × maxTtftPenaltyMs; otherwise the least prefill in flight plus this request’s own.',
  parameters: section({
    model: str({ nonEmpty: true }).default(TTFT_MODEL_PLUGIN).describe('Name of the ttft-model instance (listed before this one).'),
    threshold: num({ min: 0, max: 1 }).default(0.8).describe('Share of the prompt blocks an engine must hold to be sticky (llm-d: 0.80).'),
    maxTtftPenaltyMs: num({ minExclusive: 0, max: 600_000 })
      .default(1000)
      .describe('TTFT penalty tolerated for staying on a holder; τ = prefill throughput × this.'),
  }),
  create: (name, p, handle) =>
    new StickyUntilSaturatedPicker(name, ttftModelPlugin(handle, p.model, `sticky-until-saturated "${name}"`), {
      threshold: p.threshold,
      maxTtftPenaltyMs: p.maxTtftPenaltyMs,
    }),
});
