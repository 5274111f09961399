/**
 * Imbalance escape: when the candidates' loads are badly skewed, drop the overloaded ones
 * before scoring, so the pick stays among the less-loaded endpoints — while prefix affinity
 * still decides *among* those (unlike SGLang's fallback, which throws the cache away and
 * goes to the single least-loaded worker).
 *
 * Load is the effective queue (router in-flight, raised to the engine's running+waiting
 * when fresh), or with `unit: tokens` (the `unit` parameter) the pending tokens in
 * request-equivalents (src/plugins/shared/params.ts). The pool is imbalanced when max − min > absThreshold AND max > min × relThreshold
 * (both, as in SGLang's cache-aware policy). Then an endpoint is dropped exactly when it alone
 * meets that test against the minimum: load − min > absThreshold AND load > min × relThreshold.
 * The least-loaded endpoint always survives, so this filter never empties the set.
 */
import { loadIn, type LoadMeasure } from '../../endpoints/load.js';
import type { Endpoint } from '../../core/types.js';
import { setScratch } from '../../framework/cycle-scratch.js';
import { definePlugin } from '../../framework/plugin-api.js';
import { num, section } from '../../util/schema.js';
import { IMBALANCE_DROPPED } from '../shared/cycle-keys.js';
import { loadAwareParams, loadMeasure, staleAfter } from '../shared/params.js';
import type { Candidate, CycleState, Filter } from '../../framework/types.js';

export const IMBALANCE_ESCAPE_FILTER = 'imbalance-escape-filter';

export interface ImbalanceThresholds {
  readonly absThreshold: number;
  readonly relThreshold: number;
  /** Engine queue figures older than this are ignored (router accounting only). */
  readonly staleAfterMs: number;
  /**
   * Load unit (load-units.ts): requests (default, the effective queue) or tokens (pending
   * tokens ÷ tokensPerRequest, so the thresholds keep reading as request-equivalents).
   */
  readonly measure?: LoadMeasure;
}

export class ImbalanceEscapeFilter implements Filter {
  private readonly measure: LoadMeasure;
  /** Survivors of the current call (emptied after it: keeps no candidate alive). */
  private readonly scratch: Candidate[] = [];
  /** Each candidate's load in the current call. */
  private loads = new Float64Array(64);

  constructor(
    readonly name: string,
    private readonly t: ImbalanceThresholds,
  ) {
    this.measure = t.measure ?? { unit: 'requests', tokensPerRequest: 1, maxMetricsAgeMs: t.staleAfterMs };
  }

  /** True when a load of `load` counts as overloaded against the minimum `min`. */
  overloaded(load: number, min: number): boolean {
    return load - min > this.t.absThreshold && load > min * this.t.relThreshold;
  }

  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    if (candidates.length < 2) return candidates;
    const m = this.measure;
    const n = candidates.length;
    if (this.loads.length < n) this.loads = new Float64Array(Math.max(n, 2 * this.loads.length));
    const loads = this.loads;
    // Min and max first, without per-call arrays: most decisions keep every candidate. Each
    // load is kept for the second pass (reading it again from the snapshot cost as much).
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < n; i++) {
      const l = loadIn(m, candidates[i]!.load);
      loads[i] = l;
      if (l < min) min = l;
      if (l > max) max = l;
    }
    if (!this.overloaded(max, min)) return candidates;
    // The survivors gathered in a reused array and copied once at their size (an array grown
    // by push to a fleet's size allocates about three times that on the way).
    const scratch = this.scratch;
    let k = 0;
    const dropped: Endpoint[] = [];
    for (let i = 0; i < n; i++) {
      const c = candidates[i]!;
      if (this.overloaded(loads[i]!, min)) dropped.push(c.endpoint);
      else scratch[k++] = c;
    }
    if (k === 0) return candidates;
    const kept = scratch.slice(0, k);
    scratch.fill(SPENT, 0, k);
    setScratch(state, IMBALANCE_DROPPED, dropped);
    state.notes.push(`imbalance escape: dropped ${dropped.length} of ${candidates.length} endpoints (load min ${min}, max ${max})`);
    return kept;
  }
}

/** What the scratch holds between calls. */
const SPENT = undefined as unknown as Candidate;

/** Escape only when an engine has 32+ more in flight than the least loaded (see docs/decisions/0100-plugin-graph.md)... */
export const DEFAULT_IMBALANCE_ABS = 32;
/** ...and at least 1.5× its load, so small absolute differences never break affinity. */
export const DEFAULT_IMBALANCE_REL = 1.5;

/** The thresholds. */
export const IMBALANCE_KNOBS = {
  absThreshold: num({ min: 0, max: 1_000_000 })
    .default(DEFAULT_IMBALANCE_ABS)
    .describe('Absolute load gap (in the load unit) above the least loaded that counts as overloaded.'),
  relThreshold: num({ min: 1, max: 1000 })
    .default(DEFAULT_IMBALANCE_REL)
    .describe('...and the multiple of the least loaded it must also exceed.'),
};

export const imbalanceEscapeFilter = definePlugin({
  type: IMBALANCE_ESCAPE_FILTER,
  description:
    'When the candidates are badly skewed (max − min > absThreshold and max > min × relThreshold), drops every endpoint that alone meets that test against the least loaded; the least loaded always survives.',
  parameters: section({
    ...IMBALANCE_KNOBS,
    ...loadAwareParams,
  }),
  create: (name, p, handle) =>
    new ImbalanceEscapeFilter(name, { ...p, staleAfterMs: staleAfter(p, handle), measure: loadMeasure(p, handle) }),
});
