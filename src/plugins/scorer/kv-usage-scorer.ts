/**
 * KV-usage scorer: prefers engines with free KV-cache memory (fewer preemptions, room to
 * keep what we send them cached).
 *
 * Rule: score = 1 − kvUsage for candidates whose engine-reported kvUsage is fresh
 * (metricsAgeMs ≤ staleAfterMs). A candidate without a fresh figure gets the mean score of
 * those that have one, so missing metrics neither reward nor punish it. Neutral value: 1
 * for everyone when nobody has a fresh figure (e.g. metrics polling off).
 */
import { definePlugin } from '../../framework/plugin-api.js';
import { section } from '../../util/schema.js';
import { staleAfter, staleAfterParam } from '../shared/params.js';
import type { Candidate, CycleState, Scorer } from '../../framework/types.js';

export const KV_USAGE_SCORER = 'kv-usage-scorer';

export class KvUsageScorer implements Scorer {
  constructor(
    readonly name: string,
    private readonly staleAfterMs: number,
  ) {}

  score(_state: CycleState, candidates: readonly Candidate[]): number[] {
    const n = candidates.length;
    const out = new Array<number>(n);
    let sum = 0;
    let known = 0;
    for (let i = 0; i < n; i++) {
      const l = candidates[i]!.load;
      if (l.kvUsage !== undefined && Number.isFinite(l.kvUsage) && l.metricsAgeMs <= this.staleAfterMs) {
        const s = 1 - Math.min(1, Math.max(0, l.kvUsage));
        out[i] = s;
        sum += s;
        known++;
      } else {
        out[i] = -1;
      }
    }
    const neutral = known > 0 ? sum / known : 1;
    for (let i = 0; i < n; i++) if (out[i]! < 0) out[i] = neutral;
    return out;
  }
}

export const kvUsageScorer = definePlugin({
  type: KV_USAGE_SCORER,
  description:
    'Prefers engines with free KV-cache memory: 1 − kvUsage for fresh figures; candidates without one get the mean; nobody fresh → 1.',
  parameters: section({ ...staleAfterParam }),
  create: (name, p, handle) => new KvUsageScorer(name, staleAfter(p, handle)),
});
